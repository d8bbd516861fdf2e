// VIZ data as JSON (docs/viz.md has the format): the recorder's snapshot turned into what the viewer draws.
#pragma once
#include <optional>
#include <string>

#include "uop/viz.h"

namespace tg::viz {

std::string index_json(const Snapshot& s);
std::optional<std::string> kernel_json(const Snapshot& s, int id);   // nullopt: no such kernel kept
std::optional<std::string> realize_json(const Snapshot& s, int id);  // nullopt: no such realize kept
std::string timeline_json(const Snapshot& s);
// everything above in one script for a dumped folder: window.TG_VIZ_DATA = {...};
std::string data_js(const Snapshot& s);

std::string json_str(std::string_view s);

// The graph after the replacements `m` (every rule result so far, keyed by the node it matched), as graph_rewrite
// builds it: a replacement's own sources are replaced too, so a rule result that kept a node rewritten earlier gets
// that node's rewrite, as graph_rewrite's bottom-up rebuild gives it. A replacement that contains its own key (none
// reaches the end of a rewrite) is taken as it is.
// `probe`: a node whose value in that graph goes to *probe_out (null when the graph does not reach it).
UOpRef replay(const UOpRef& input, const UOpMap<UOpRef>& m, const UOp* probe = nullptr, UOpRef* probe_out = nullptr);  // a JSON string literal, escaped (bytes that are not UTF-8 become U+FFFD)

}  // namespace tg::viz
