// The search page served at "/": plain HTML, CSS and JS in the binary, no external resources.
#pragma once
#include <string>

namespace oc::serve {
const std::string& search_page();
}
