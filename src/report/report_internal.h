// Pieces shared by the report's page files (report.cpp: page and training curves;
// report_predictions.cpp: the zero-shot predictions section; report_assets.cpp: CSS and
// the hover script). Not part of the module's interface.
#pragma once
#include <string>
#include <string_view>

#include "report/run_data.h"

namespace oc::report::detail {

// <section class="card"> with an <h3> title (escaped here), a body (HTML) and an optional
// footnote (HTML).
std::string card(std::string_view title, const std::string& body_html, const std::string& foot_html = "",
                 std::string_view extra_class = "");
// <p class="note">: something missing, and which command produces it (HTML).
std::string note(const std::string& html);
// <code>…</code> around escaped text.
std::string code(std::string_view text);

std::string predictions_section(const Predictions& p);

// The page's stylesheet and its optional hover script (vanilla JS, no library: the page
// renders fully without it; it adds a read-out of the nearest logged point when the pointer
// is over a line chart). Files in src/report/assets/, compiled in by oc_embed_assets.
std::string_view page_css();
std::string_view page_script();

// What produces each missing piece, said once so every note agrees.
inline constexpr std::string_view kHowPredictions =
    "The final zero-shot evaluation of a run writes it: <code>openclip train</code> with <code class=\"flag\">--zeroshot-data</code>/<code class=\"flag\">--zeroshot-classnames</code> "
    "(or <code class=\"flag\">--imagenet-val</code>) and <code class=\"flag\">--zeroshot-frequency N</code>, "
    "or <code>openclip eval</code> on a checkpoint of this run with <code class=\"flag\">--predictions-dir RUN_DIR</code>.";
inline constexpr std::string_view kHowZeroShotLogs =
    "Train with <code class=\"flag\">--zeroshot-frequency N</code> and <code class=\"flag\">--zeroshot-data</code>/"
    "<code class=\"flag\">--zeroshot-classnames</code> (or <code class=\"flag\">--imagenet-val</code>) to log "
    "<code>val/&lt;task&gt;-zeroshot-top1</code> and <code>-top5</code> each N epochs.";
inline constexpr std::string_view kHowTensorboard =
    "<code>openclip train ... --report-to tensorboard</code> writes them to <code>RUN_DIR/tensorboard/</code>.";
inline constexpr std::string_view kHowParams = "<code>openclip train</code> writes <code>params.txt</code> when a run starts.";

}  // namespace oc::report::detail
