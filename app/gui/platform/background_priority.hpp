// Filter jobs run at a lower CPU priority than the GUI thread, so that with every core busy on a
// CPU job the window still repaints and answers at once. Worker threads started from a lowered
// thread inherit its priority (Linux: the nice value is per thread and copied to new threads).
#pragma once

namespace tf::gui {

// Lowers the calling thread's priority (nice +5); once per thread, harmless to repeat.
void lower_thread_priority();

}  // namespace tf::gui
