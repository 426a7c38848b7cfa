// A small well-formedness check for the report's markup: every element closed in order
// (HTML void elements and "/>" excepted), attribute quotes balanced, every '&' the start
// of an entity. Enough to catch a broken chart or an unescaped class name.
#pragma once
#include <cctype>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace oc::report::test {

// "" when well-formed, else what is wrong and at which byte.
inline std::string check_markup(const std::string& s) {
  static const std::set<std::string> void_elems = {"meta", "img", "br", "hr", "input", "link"};
  static const std::regex entity(R"(^&(#\d+|#x[0-9a-fA-F]+|[a-zA-Z]+);)");
  std::vector<std::string> stack;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '&') {
      std::smatch m;
      const std::string ahead = s.substr(i, 12);
      if (!std::regex_search(ahead, m, entity)) return "bare '&' at byte " + std::to_string(i);
      ++i;
      continue;
    }
    if (s[i] != '<') {
      ++i;
      continue;
    }
    if (s.compare(i, 4, "<!--") == 0) {
      i = s.find("-->", i);
      if (i == std::string::npos) return "unclosed comment";
      i += 3;
      continue;
    }
    if (s.compare(i, 2, "<!") == 0) {
      i = s.find('>', i) + 1;
      continue;
    }
    // A tag: find its end outside quotes.
    size_t j = i + 1;
    char quote = 0;
    for (; j < s.size(); ++j) {
      if (quote) {
        if (s[j] == quote) quote = 0;
        else if (s[j] == '<') return "'<' inside an attribute value at byte " + std::to_string(j);
      } else if (s[j] == '"' || s[j] == '\'') {
        quote = s[j];
      } else if (s[j] == '>') {
        break;
      }
    }
    if (j >= s.size()) return "unterminated tag at byte " + std::to_string(i);
    const bool closing = s[i + 1] == '/';
    size_t n0 = i + (closing ? 2 : 1), n1 = n0;
    while (n1 < j && (std::isalnum(uint8_t(s[n1])) || s[n1] == '-')) ++n1;
    std::string name = s.substr(n0, n1 - n0);
    for (auto& c : name) c = char(std::tolower(uint8_t(c)));
    if (name.empty()) return "a '<' that starts no tag at byte " + std::to_string(i);
    const bool self_closing = s[j - 1] == '/' || void_elems.count(name);
    if (closing) {
      if (stack.empty() || stack.back() != name)
        return "</" + name + "> at byte " + std::to_string(i) + " closes <" + (stack.empty() ? "nothing" : stack.back()) + ">";
      stack.pop_back();
    } else if (!self_closing) {
      stack.push_back(name);
      if (name == "script" || name == "style") {  // raw text up to the end tag
        const size_t e = s.find("</" + name + ">", j);
        if (e == std::string::npos) return "unclosed <" + name + ">";
        i = e;
        continue;
      }
    }
    i = j + 1;
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + "> at the end";
  return "";
}

inline size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + needle.size())) ++n;
  return n;
}

}  // namespace oc::report::test
