// `mpirun -n N tilefilter batch ...`: one batch spread over the ranks of an MPI job. Rank 0 walks
// IN_DIR and hands out files one at a time to whichever rank asks (itself included), then writes
// the one merged report; every rank filters with its own devices and codec threads.
#pragma once
#include <cstdlib>
#include <optional>
#include <string>

#include "tilefilter/batch/batch.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cli {

// Ranks announced by the launcher (OpenMPI's mpirun, MPICH/Slurm PMI, srun with PMIx); 0 when the
// process was not started by one, so a plain `tilefilter batch` never touches MPI.
inline int launcher_ranks() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  if (std::getenv("PMIX_RANK"))
    if (const char* v = std::getenv("SLURM_STEP_NUM_TASKS")) return std::atoi(v);
  return 0;
}

struct RankOutcome {
  bool root = true;                // rank 0 (or a single process): prints the summary, writes the report
  BatchReport report;              // on rank 0, the merged report of every rank
  int exit_code = 0;               // on the other ranks: the status to end with, quietly
  std::optional<Error> job_error;  // a problem with the job itself, found by rank 0
};

// Runs the batch as one rank (MPI_Init .. MPI_Finalize inside). With a single rank it is run_batch.
// A problem with the job itself (bad IN_DIR, --resume over another job's outputs) throws on rank 0
// and ends the other ranks quietly with the same status; a rank that fails later aborts the job
// (its files in flight are lost, and `--resume` redoes them).
RankOutcome run_batch_mpi(const BatchOptions& options);

}  // namespace tf::cli
