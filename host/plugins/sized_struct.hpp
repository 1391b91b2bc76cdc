#pragma once
// The one way the host reads a struct that a plugin wrote and that carries its own size (struct_size, the
// first field): the descriptor, its capabilities, a plan check's answer. Later SDK minors only append
// fields, so a plugin built against an older minor wrote a prefix of the host's struct. The host copies
// the bytes the plugin's struct_size and minor both cover over a host struct whose other fields keep their
// defaults, so it never reads past what the plugin wrote, and refuses a struct_size smaller than the plugin's own minor
// promised (a broken build: those fields would be garbage) with an error naming the plugin and the struct.
//
// Each struct's table below says which minor appended which fields (where that minor's struct ends); a
// struct without a table does not compile with read_sized.
#include <gradsweep/sdk/abi.hpp>
#include <gradsweep/sdk/capabilities.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace gradsweep::plugins {

// SDK 1.`minor`'s struct ends at byte `end` (the end of the last field that minor appended).
struct AppendedIn {
  std::uint32_t minor;
  std::size_t end;
};

// The end of `field` (a member, or a member of a member) in T.
#define GRADSWEEP_FIELD_END(T, field) (offsetof(T, field) + sizeof(std::declval<T&>().field))

template <class T>
struct SizedLayout;  // name and appended: one specialization per struct that crosses with a struct_size

template <>
struct SizedLayout<sdk::PluginDescriptor> {
  static constexpr const char* name = "PluginDescriptor";
  static constexpr std::array<AppendedIn, 2> appended{{
      {0, GRADSWEEP_FIELD_END(sdk::PluginDescriptor, destroy)},
      {4, GRADSWEEP_FIELD_END(sdk::PluginDescriptor, option_choices)},  // capabilities, check_plan, option_choices
  }};
};

template <>
struct SizedLayout<sdk::StrategyCapabilities> {
  static constexpr const char* name = "StrategyCapabilities";
  static constexpr std::array<AppendedIn, 3> appended{{
      {4, GRADSWEEP_FIELD_END(sdk::StrategyCapabilities, devices)},
      {7, GRADSWEEP_FIELD_END(sdk::StrategyCapabilities, reshards)},
      {9, GRADSWEEP_FIELD_END(sdk::StrategyCapabilities, deterministic)},
  }};
};

// The host allocates the answer (its own size); the plugin writes a prefix and may overwrite struct_size
// with its own sizeof, by assigning a whole PlanAnswer.
template <>
struct SizedLayout<sdk::PlanAnswer> {
  static constexpr const char* name = "PlanAnswer";
  static constexpr std::array<AppendedIn, 3> appended{{
      {4, GRADSWEEP_FIELD_END(sdk::PlanAnswer, capabilities.devices)},
      {7, GRADSWEEP_FIELD_END(sdk::PlanAnswer, capabilities.reshards)},
      {9, GRADSWEEP_FIELD_END(sdk::PlanAnswer, capabilities.deterministic)},
  }};
};

#undef GRADSWEEP_FIELD_END

// The bytes SDK 1.`minor`'s T has at least; 0 before T existed.
template <class T>
constexpr std::size_t size_required(std::uint32_t minor) {
  std::size_t end = 0;
  for (const AppendedIn& a : SizedLayout<T>::appended)
    if (a.minor <= minor && a.end > end) end = a.end;
  return end;
}

// Throws when `struct_size` is smaller than what SDK 1.`minor` promised for T. `plugin` names the plugin
// ("strategy 'ps'", or its file before it has a name).
template <class T>
void check_struct_size(std::uint32_t struct_size, std::uint32_t minor, const std::string& plugin) {
  const std::size_t required = size_required<T>(minor);
  if (struct_size < required)
    throw std::runtime_error(plugin + ": its " + SizedLayout<T>::name + " is " + std::to_string(struct_size) +
                             " bytes, but SDK 1." + std::to_string(minor) +
                             " (the SDK it says it was built against) has " + std::to_string(required) +
                             ": a broken build; rebuild the plugin against the SDK");
}

// The plugin's struct at `source` as the host's T: the bytes its struct_size covers, and no further than its
// minor's fields, over `base` (by default T's defaults); struct_size then says the host's size. Only for
// structs the host may copy byte by byte.
template <class T>
T read_sized(const T* source, std::uint32_t minor, const std::string& plugin, const T& base = T{}) {
  static_assert(std::is_trivially_copyable_v<T>, "read_sized copies bytes: T must be trivially copyable");
  std::uint32_t size = 0;
  std::memcpy(&size, source, sizeof size);  // struct_size: the one field every version has, first
  check_struct_size<T>(size, minor, plugin);
  T out = base;
  std::memcpy(static_cast<void*>(&out), source, std::min<std::size_t>({size, size_required<T>(minor), sizeof(T)}));
  out.struct_size = static_cast<std::uint32_t>(sizeof(T));
  return out;
}

}  // namespace gradsweep::plugins
