#include "vgpu/dra/quantity.h"

#include <cctype>
#include <limits>

namespace vgpu::dra {
namespace {

struct Suffix {
  std::string_view text;
  int base;  // 2 or 10
  int exponent;
};

// Longest first, so "Ki" is tried before "K"-less forms and "Ei" before "E".
constexpr Suffix kSuffixes[] = {{"Ki", 2, 10}, {"Mi", 2, 20}, {"Gi", 2, 30}, {"Ti", 2, 40},
                                {"Pi", 2, 50}, {"Ei", 2, 60}, {"k", 10, 3},  {"M", 10, 6},
                                {"G", 10, 9},  {"T", 10, 12}, {"P", 10, 15}, {"E", 10, 18},
                                {"m", 10, -3}};

Status Bad(std::string_view text, std::string_view why) {
  return InvalidArgumentError("quantity '" + std::string(text) + "': " + std::string(why));
}

}  // namespace

Result<uint64_t> ParseQuantity(std::string_view text) {
  std::string_view s = text;
  if (s.empty()) {
    return Bad(text, "empty");
  }
  if (s.front() == '+') {
    s.remove_prefix(1);
  }
  if (!s.empty() && s.front() == '-') {
    return Bad(text, "negative");
  }
  size_t i = 0;
  std::string digits;  // integer and fraction digits, without the point
  int fraction_digits = 0;
  bool point = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits += c;
      fraction_digits += point ? 1 : 0;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (digits.empty()) {
    return Bad(text, "no digits");
  }
  std::string_view rest = s.substr(i);
  int base = 10;
  int exponent = 0;
  if (!rest.empty() && (rest[0] == 'e' || rest[0] == 'E') && rest.size() > 1 &&
      (std::isdigit(static_cast<unsigned char>(rest[1])) || rest[1] == '-' || rest[1] == '+')) {
    int sign = 1;
    size_t j = 1;
    if (rest[j] == '-' || rest[j] == '+') {
      sign = rest[j] == '-' ? -1 : 1;
      ++j;
    }
    if (j >= rest.size() || rest.size() - j > 3) {
      return Bad(text, "bad exponent");
    }
    for (; j < rest.size(); ++j) {
      if (!std::isdigit(static_cast<unsigned char>(rest[j]))) {
        return Bad(text, "bad exponent");
      }
      exponent = exponent * 10 + (rest[j] - '0');
    }
    exponent *= sign;
  } else if (!rest.empty()) {
    const Suffix* found = nullptr;
    for (const Suffix& x : kSuffixes) {
      if (rest == x.text) {
        found = &x;
        break;
      }
    }
    if (found == nullptr) {
      return Bad(text, "unknown suffix '" + std::string(rest) + "'");
    }
    base = found->base;
    exponent = found->exponent;
  }
  // value = digits * 10^-fraction_digits * base^exponent, rounded up.
  unsigned __int128 num = 0;
  for (char c : digits) {
    num = num * 10 + static_cast<unsigned>(c - '0');
    if (num > (static_cast<unsigned __int128>(1) << 100)) {
      return Bad(text, "too large");
    }
  }
  unsigned __int128 den = 1;
  for (int k = 0; k < fraction_digits; ++k) {
    den *= 10;
  }
  if (base == 2) {
    num <<= exponent;
  } else if (exponent >= 0) {
    for (int k = 0; k < exponent; ++k) {
      num *= 10;
      if (num > (static_cast<unsigned __int128>(1) << 120)) {
        return Bad(text, "too large");
      }
    }
  } else {
    for (int k = 0; k < -exponent; ++k) {
      den *= 10;
      if (den > (static_cast<unsigned __int128>(1) << 120)) {
        return Bad(text, "exponent too small");
      }
    }
  }
  unsigned __int128 value = (num + den - 1) / den;
  if (value > std::numeric_limits<uint64_t>::max()) {
    return Bad(text, "too large");
  }
  return static_cast<uint64_t>(value);
}

}  // namespace vgpu::dra
