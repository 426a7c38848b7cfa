// OpenAI's embeddings API on `openclip serve` (docs/SERVE.md, "OpenAI-compatible API"), so
// that OpenAI's SDKs and the clients written for them (text-embeddings-inference, vLLM and
// llama.cpp's server answer the same shape) work unchanged:
//   POST /v1/embeddings  {"model", "input": str | [str] | [int] | [[int]] | items,
//                         "encoding_format"?: "float" | "base64", "dimensions"?: n, "user"?}
//     -> {"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model",
//         "usage": {"prompt_tokens", "total_tokens"}}
//   GET /v1/models, GET /v1/models/{id}
// Images, as the common extension does: an input string that is a data:image/...;base64,
// URL, or an item {"image": "<base64, data: URL or http(s) URL>"}. http(s) URLs are fetched
// only with --allow-image-urls (serve/url_fetch.h: public addresses only unless
// --allow-private-image-urls; all fetches of a request within --image-url-timeout; each within
// --max-body-bytes and charged to --max-buffered-body while held); without it they are a 400
// that names the flag. Errors are OpenAI's {"error": {"message", "type", "param", "code"}}.
#pragma once
#include <string>

#include "serve/handlers.h"
#include "serve/http.h"

namespace oc::serve {

http::Response openai_embeddings(const Context& c, const http::Request& req);
http::Response openai_models(const Context& c, const http::Request& req);  // both GET paths

// True for the paths above: their errors (from any layer) are given OpenAI's shape.
bool is_openai_path(const std::string& path);
// Rewrites an error response of ours ({"error": {"code", "message"}}) into OpenAI's shape;
// leaves other responses (and ones already in that shape) as they are.
void to_openai_error(http::Response& r);

}  // namespace oc::serve
