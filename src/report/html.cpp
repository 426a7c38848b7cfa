// Escaping and number formatting for the report page (see html.h).
#include "report/html.h"

#include <cmath>
#include <cstdio>

namespace oc::report {

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

bool is_base64(std::string_view s) {
  if (s.empty() || s.size() % 4 != 0) return false;
  size_t pad = 0;
  while (pad < 2 && s[s.size() - 1 - pad] == '=') ++pad;
  for (size_t i = 0; i + pad < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    if (!ok) return false;
  }
  return true;
}

std::string format_number(double v, int significant) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return "0";
  char buf[64];
  const double a = std::fabs(v);
  if (a < 1e-3 || a >= 1e7) {
    std::snprintf(buf, sizeof buf, "%.*e", significant - 1, v);
    // 2.000e-04 -> 2e-4: no trailing zeros in the mantissa, no padding in the exponent.
    std::string s = buf;
    const size_t e = s.find('e');
    std::string m = s.substr(0, e), x = s.substr(e + 1);
    if (m.find('.') != std::string::npos) {
      while (m.back() == '0') m.pop_back();
      if (m.back() == '.') m.pop_back();
    }
    const bool neg = x[0] == '-';
    x.erase(0, 1);
    while (x.size() > 1 && x[0] == '0') x.erase(0, 1);
    return m + "e" + (neg ? "-" : "") + x;
  }
  // Digits after the point so that `significant` digits show (none for big integers).
  const int int_digits = a >= 1 ? int(std::floor(std::log10(a))) + 1 : 0;
  int decimals = std::max(0, significant - int_digits);
  if (a < 1) decimals = significant - int(std::floor(std::log10(a))) - 1;
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

std::string format_percent(double fraction, int decimals) {
  if (!std::isfinite(fraction)) return format_number(fraction);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f%%", decimals, fraction * 100.0);
  return buf;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  char buf[64];
  const long s = std::lround(seconds);
  if (s < 60) std::snprintf(buf, sizeof buf, "%ld s", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%ld min %02ld s", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld h %02ld min", s / 3600, (s % 3600) / 60);
  return buf;
}

}  // namespace oc::report
