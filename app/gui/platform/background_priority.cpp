#include "background_priority.hpp"

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tf::gui {

void lower_thread_priority() {
#if defined(__linux__)
  thread_local bool lowered = false;
  if (lowered) return;
  lowered = true;
  const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
  const int now = ::getpriority(PRIO_PROCESS, tid);
  if (now < 5) ::setpriority(PRIO_PROCESS, tid, 5);
#endif
}

}  // namespace tf::gui
