// Dropping the last reference to a large image (tens of MB) returns its pages to the system, which
// takes milliseconds; on the GUI thread that is a visible stall while a slider moves. Values handed
// here are released on a pool thread instead.
#pragma once
#include <QThreadPool>
#include <memory>
#include <utility>

namespace tf::gui {

template <class T> void release_later(T&& value) {
  auto held = std::make_shared<std::decay_t<T>>(std::forward<T>(value));
  QThreadPool::globalInstance()->start([held]() mutable { *held = std::decay_t<T>{}; });
}

}  // namespace tf::gui
