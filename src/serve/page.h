// The search page served at "/": a text box (search by text, ?q= in the URL runs it on load),
// an image upload ("more like this"), and the results as a grid of images with captions and
// scores. Plain HTML, CSS and JS in one file, src/serve/assets/search.html, compiled into the
// binary by oc_embed_assets; no external resources.
#pragma once
#include <string_view>

namespace oc::serve {
std::string_view search_page();
}
