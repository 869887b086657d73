#include "tilefilter/engine/device.hpp"

#include <cstdint>

namespace tf {

bool FaultInjection::should_fail(const std::string& device_id, int tile, int attempt) const {
  if (rate <= 0) return false;
  std::uint32_t h = seed * 2654435761U;
  for (char c : device_id) h = (h ^ static_cast<unsigned char>(c)) * 16777619U;
  h ^= static_cast<std::uint32_t>(tile) * 0x9E3779B9U + static_cast<std::uint32_t>(attempt) * 0x85EBCA6BU;
  h ^= h >> 15;
  h *= 0x2C1B3C6DU;
  h ^= h >> 12;
  return (h % 1000000U) < static_cast<std::uint32_t>(rate * 1000000.0);
}

}  // namespace tf
