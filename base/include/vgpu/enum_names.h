// The names of an enum's values as one table, read both ways: NameOf for logs, output and file
// formats, ValueOf for parsing flags and files. Each name is spelled once, in the table; a
// switch per direction would spell it twice.
//
//   constexpr EnumName<LinkLevel> kLinkLevelNames[] = {
//       {LinkLevel::kSys, "SYS"}, {LinkLevel::kNode, "NODE"}, ...};
//   std::string_view LinkLevelName(LinkLevel l) { return NameOf(l, kLinkLevelNames, "?"); }
//
// Names are string literals, so NameOf(...).data() is a C string for callers that need one.
// Header only and free of allocation: the preload libraries use it too.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace vgpu {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

// The name of `value`, or `unknown` for a value the table does not list (a number from a newer
// peer, or a cast from raw input).
template <typename E, std::size_t N>
constexpr std::string_view NameOf(E value, const EnumName<E> (&table)[N],
                                  std::string_view unknown) {
  for (const EnumName<E>& entry : table) {
    if (entry.value == value) {
      return entry.name;
    }
  }
  return unknown;
}

// The value named `name` (exact match), or nullopt.
template <typename E, std::size_t N>
constexpr std::optional<E> ValueOf(std::string_view name, const EnumName<E> (&table)[N]) {
  for (const EnumName<E>& entry : table) {
    if (entry.name == name) {
      return entry.value;
    }
  }
  return std::nullopt;
}

// True when the table lists first..last in order, each once. Tables over dense enums assert it,
// static_assert(ListsEach(table, E::kFirst, E::kLast)): a value skipped or repeated fails the
// build, as -Wswitch did for the switch the table replaces; a value appended after `last` needs
// `last` moved with it.
template <typename E, std::size_t N>
constexpr bool ListsEach(const EnumName<E> (&table)[N], E first, E last) {
  const auto number = [](E v) { return static_cast<long long>(v); };
  if (number(last) - number(first) + 1 != static_cast<long long>(N)) {
    return false;
  }
  for (std::size_t i = 0; i < N; ++i) {
    if (number(table[i].value) != number(first) + static_cast<long long>(i)) {
      return false;
    }
  }
  return true;
}

}  // namespace vgpu
