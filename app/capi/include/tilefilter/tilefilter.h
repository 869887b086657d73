/* TileFilter's C API: the one surface other languages bind to (the Python package `tilefilter` does,
 * through ctypes). libtilefilter.so.0; plain C types only, no C++ type or exception crosses it.
 *
 * Errors: every function that can fail returns a tf_status. TF_OK is 0; otherwise tf_last_error()
 * returns the one-line message the command-line tool prints for the same failure ("gaussian:sigma=x:
 * ..."), for the calling thread, until that thread's next call into the library.
 *
 * Ownership: the library owns what it returns through `const char*` (valid until the thread's next
 * call, or for the life of the object it came from, as stated) and every handle until it is passed to
 * its _free function; the caller owns every buffer it passes in, and the library keeps no pointer to
 * one after the call returns (tf_filter_device: after the work queued on the caller's stream is done).
 *
 * Threads: every function may be called from any thread at once; a chain may be shared by threads.
 */
#ifndef TILEFILTER_TILEFILTER_H
#define TILEFILTER_TILEFILTER_H

#include <stddef.h>
#include <stdint.h>

#if defined(TF_C_BUILDING)
#define TF_C_API __attribute__((visibility("default")))
#else
#define TF_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever a function's meaning or a struct's layout changes. */
#define TF_C_API_VERSION 2

typedef enum tf_status {
  TF_OK = 0,
  TF_ERR_INVALID_ARGUMENT = 1, /* a spec, a parameter, an array shape: the CLI's usage errors */
  TF_ERR_IO = 2,               /* a file could not be opened, read or written */
  TF_ERR_DECODE = 3,           /* a file is not a readable image */
  TF_ERR_LIMIT = 4,            /* past a documented limit (kernel size, halo, pixels) */
  TF_ERR_DEVICE = 5,           /* a CUDA or device error */
  TF_ERR_CANCELLED = 6,
  TF_ERR_INTERNAL = 7,
  TF_ERR_NO_GPU_BACKEND = 8, /* a device pointer was given to a build without CUDA */
  TF_ERR_OUT_OF_MEMORY = 9
} tf_status;

typedef enum tf_pixel_type { TF_U8 = 0, TF_U16 = 1, TF_F32 = 2 } tf_pixel_type;

/* The message of the calling thread's last failed call ("" when none); owned by the library. */
TF_C_API const char* tf_last_error(void);
/* "0.1.0" */
TF_C_API const char* tf_version(void);
/* TF_C_API_VERSION of the library loaded (a binding checks it against the header it was made for). */
TF_C_API int tf_api_version(void);

/* ---- Images --------------------------------------------------------------------------------- */

/* A strided image the caller owns: rows `pitch` bytes apart, pixels packed in a row (channels
 * interleaved). `data` is host memory for tf_filter, device memory for tf_filter_device. */
typedef struct tf_image {
  void* data;
  size_t pitch;
  int width, height;
  int channels; /* 1, 3 or 4 */
  int type;     /* tf_pixel_type */
} tf_image;

/* ---- Chains --------------------------------------------------------------------------------- */

/* A parsed, validated filter chain (the CLI's --filter options, or a preset) and its border. */
typedef struct tf_chain tf_chain;

/* `specs[0..count)` as `--filter` takes them ("gaussian:sigma=2"). */
TF_C_API tf_status tf_chain_new(const char* const* specs, int count, tf_chain** out);
/* A preset (a JSON file as tilefilter-gui saves it, or the name of a bundled one, as `--preset`)
 * followed by `specs[0..count)`; its border becomes the chain's default border. */
TF_C_API tf_status tf_chain_from_preset(const char* preset, const char* const* specs, int count, tf_chain** out);
TF_C_API void tf_chain_free(tf_chain* chain);
/* How far the chain reaches past a pixel: halo[0..4) = left, top, right, bottom. */
TF_C_API void tf_chain_halo(const tf_chain* chain, int halo[4]);
/* The preset's border ("reflect101" for chains made from specs) and its constant value. Owned by
 * the chain. */
TF_C_API const char* tf_chain_border(const tf_chain* chain, double* value);
/* Number of stages, and stage i's spec (owned by the chain). */
TF_C_API int tf_chain_length(const tf_chain* chain);
TF_C_API const char* tf_chain_spec(const tf_chain* chain, int index);

/* ---- Options -------------------------------------------------------------------------------- */

typedef struct tf_options {
  size_t struct_size;   /* sizeof(tf_options), set by tf_options_init */
  const char* border;   /* NULL = the chain's border; else reflect101|reflect|replicate|constant|wrap */
  double border_value;  /* for constant, in pixel units (used when border is not NULL) */
  const char* devices;  /* as --devices: all, gpu, cpu, cpu:N, 0,1, ... NULL = "all" */
  int exact;            /* 1: direct convolution only (the same bits on every backend and tiling) */
  int tile_width;       /* 0 = automatic */
  int tile_height;      /* 0 = automatic */
  int streams;          /* CUDA streams per GPU, 0 = automatic */
  size_t device_memory; /* cap per GPU in bytes, 0 = free memory */
} tf_options;

TF_C_API void tf_options_init(tf_options* options);

/* ---- Filtering ------------------------------------------------------------------------------ */

/* Filters host image `src` into `dst` (same size, channels and type; they must not overlap). NULL
 * options = defaults. Blocks until done. */
TF_C_API tf_status tf_filter(const tf_chain* chain, const tf_image* src, const tf_image* dst,
                             const tf_options* options);

/* Filters `src` into `dst`, both in the memory of CUDA device `device` (same size, channels and type;
 * `dst` apart from `src`, or `src` itself, same data and pitch, to filter in place), on `stream` (a
 * cudaStream_t; NULL = the legacy default stream): the work is queued on that stream and the call
 * returns without waiting for it; `src` must stay valid and unchanged, and `dst` unread, until the
 * stream has run past it. Direct convolution always (the bits of `exact`, in place or not).
 * Of `options` (NULL = defaults) the border and the devices apply; the rest is checked as tf_filter
 * checks it. `devices` spreads the image in bands of rows over several GPUs, each band copied to its
 * GPU and back (peer copies): "all" or "gpu" (or NULL) = every GPU where the chain's work outweighs
 * the copies (the library decides, from the chain, the pixel type and the image's size), "0,1" =
 * those ordinals; a single ordinal = `device` alone; in place, `device` alone. CPUs ("cpu", "cpu:N")
 * are refused. A build without CUDA returns TF_ERR_NO_GPU_BACKEND. */
TF_C_API tf_status tf_filter_device(const tf_chain* chain, const tf_image* src, const tf_image* dst, int device,
                                    void* stream, const tf_options* options);

/* ---- Files ---------------------------------------------------------------------------------- */

/* What a file holds, as open_image reads its header. */
typedef struct tf_image_info {
  int width, height, channels, type;
  int stored_channels; /* 2 = gray+alpha, delivered as 4 channels */
  int orientation;     /* EXIF orientation, 1..8 */
  int has_exif, has_icc, has_xmp;
  char codec[32];
} tf_image_info;

TF_C_API tf_status tf_read_info(const char* path, tf_image_info* info);
/* Decodes the whole file into `dst` (the caller's memory, of tf_read_info's size, channels and type;
 * any pitch). */
TF_C_API tf_status tf_read(const char* path, const tf_image* dst);

/* A writer that takes rows top to bottom; the file appears under `path` only at tf_writer_finish
 * (temporary file + rename). `metadata_from`, when not NULL, is a file whose EXIF, ICC and XMP are
 * copied into the output. `quality` 1..100 (JPEG, WebP; 0 = the quality and chroma subsampling of a
 * JPEG `metadata_from`, or 92); `compression` as --compression
 * (NULL = the format's default). */
typedef struct tf_writer tf_writer;
TF_C_API tf_status tf_writer_new(const char* path, int width, int height, int channels, int type,
                                 const char* metadata_from, int quality, const char* compression, tf_writer** out);
TF_C_API tf_status tf_writer_write(tf_writer* writer, const tf_image* rows);
TF_C_API tf_status tf_writer_finish(tf_writer* writer);
/* Frees the writer; an unfinished file is removed and the target left untouched. */
TF_C_API void tf_writer_free(tf_writer* writer);
/* Writes a whole image (a writer, one write, finish). */
TF_C_API tf_status tf_write(const char* path, const tf_image* src, const char* metadata_from, int quality,
                            const char* compression);

/* `tilefilter apply IN OUT`: streamed band by band, metadata copied. */
TF_C_API tf_status tf_apply_file(const tf_chain* chain, const char* input, const char* output,
                                 const tf_options* options, int quality, const char* compression);

/* ---- Batch ---------------------------------------------------------------------------------- */

typedef struct tf_batch_result {
  int files_ok, files_failed, files_resumed, files_cancelled, exit_code;
  double wall_s, megapixels;
} tf_batch_result;

/* `tilefilter batch IN_DIR OUT_DIR`: `format` same|png|jpg|tiff (NULL = same); `report_json`, when
 * not NULL, receives the JSON report (`--report`). Failures of single files are in the result, not
 * the status. */
TF_C_API tf_status tf_batch(const tf_chain* chain, const char* input_dir, const char* output_dir,
                            const tf_options* options, const char* format, int recursive, int resume,
                            const char* report_json, tf_batch_result* result);

/* ---- What there is -------------------------------------------------------------------------- */

/* JSON texts, owned by the library, valid for the life of the process:
 * tf_filters_json: [{"name", "summary", "params": [{"name", "kind", "min", "max", "default", "choices",
 *   "help"}]}], the catalog `tilefilter filters` prints;
 * tf_presets_json: [{"name", "description", "path", "specs": [...], "border"}], the bundled presets. */
TF_C_API const char* tf_filters_json(void);
TF_C_API const char* tf_presets_json(void);
/* {"devices": [{"id", "name", "kind": "gpu"|"cpu", "ordinal", "memory_total", "memory_free",
 * "multiprocessors", "link"}], "note", "cuda"}: what `devices` ("all" when NULL) selects, as
 * `tilefilter devices --devices` shows it; owned by the library until the thread's next call. */
TF_C_API tf_status tf_devices_json(const char* devices, const char** out);

/* ---- Chains as descriptions, kernels as values ---------------------------------------------- */

/* One stage of a chain: a filter spec, or (spec NULL) a kernel given by its values. */
typedef struct tf_stage {
  const char* spec;   /* "gaussian:sigma=2"; NULL: the kernel below */
  const double* taps; /* 2-D: height rows of width taps; separable: width row taps, then height column taps */
  int width, height;  /* 2-D up to 1023 a side; one row, one column or a separable pair up to 4095 taps */
  int separable;      /* 1: the kernel is col * row^T, applied as a row pass then a column pass */
  int normalize;      /* 1: taps divided by their sum (each factor by its own when separable) */
} tf_stage;

/* A chain of `stages[0..count)` with `border` (NULL = reflect101; else as tf_options.border) and its
 * constant value. A 2-D kernel's taps are rounded to float32 as a kernel file's numbers are, so its
 * results have the bits of the same numbers in a file (custom:file=K,normalize=...). */
TF_C_API tf_status tf_chain_new_stages(const tf_stage* stages, int count, const char* border, double border_value,
                                       tf_chain** out);
/* Stage `index` as tf_chain_new_stages takes it back, applying the same taps: a spec stage gives its
 * spec; a kernel stage (custom:file=..., or one given as values) gives spec NULL, the taps it applies
 * (normalized already: normalize 0; owned by the library until the thread's next call) and, when
 * `kernel_file` is not NULL, the file it was read from (NULL for values; owned by the chain). */
TF_C_API tf_status tf_chain_stage(const tf_chain* chain, int index, tf_stage* out, const char** kernel_file);
/* The names tf_options.border takes, '|'-separated ("reflect101|reflect|..."); owned by the library. */
TF_C_API const char* tf_border_names(void);
/* The bundled presets as tf_presets_json lists them, with "stages" instead of "specs" and nothing
 * written: [{"name", "title", "description", "path", "stages": [{"spec"} | {"kernel": [[...]],
 * "normalize"}], "border", "border_value"}]. Owned by the library, valid for the life of the process. */
TF_C_API const char* tf_presets_stages_json(void);

/* ---- Batch progress ------------------------------------------------------------------------- */

typedef struct tf_batch_progress {
  int files_done, files_total, files_failed;
  double megapixels_done, elapsed_s;
} tf_batch_progress;
/* Called from the batch's threads, one call at a time, after each file and on a steady tick while files
 * are worked on; counts never go back. A non-zero return stops the batch taking new files (the files in
 * flight are finished; the result counts what was done). */
typedef int (*tf_progress_fn)(const tf_batch_progress* progress, void* user);
/* tf_batch with `progress(..., user)` as it goes. */
TF_C_API tf_status tf_batch_with_progress(const tf_chain* chain, const char* input_dir, const char* output_dir,
                                          const tf_options* options, const char* format, int recursive, int resume,
                                          const char* report_json, tf_batch_result* result, tf_progress_fn progress,
                                          void* user);

#ifdef __cplusplus
}
#endif

#endif /* TILEFILTER_TILEFILTER_H */
