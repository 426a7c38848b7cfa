// Text that goes into the HTML report: escaping (every string that comes from a run folder
// or a predictions file passes through escape()), compact number formatting for chart
// labels and cards, and the check that an image payload is plain base64 before it is put
// into a data: URI.
#pragma once
#include <string>
#include <string_view>

namespace oc::report {

// & < > " ' -> entities; valid in text and in double- or single-quoted attributes.
std::string escape(std::string_view s);

// Only A-Z a-z 0-9 + / and trailing '=' padding, length a multiple of 4, not empty.
bool is_base64(std::string_view s);

// Short, readable numbers for axis ticks and cards: 4 significant digits, no trailing
// zeros, exponent form for very small or very large magnitudes (1.5e-5, 2.5e7);
// "NaN", "inf", "-inf" for non-finite values.
std::string format_number(double v, int significant = 4);

// A fraction as a percentage with `decimals` digits: 0.8812 -> "88.1%".
std::string format_percent(double fraction, int decimals = 1);

// Seconds as "42 s", "3 min 20 s", "2 h 05 min".
std::string format_duration(double seconds);

}  // namespace oc::report
