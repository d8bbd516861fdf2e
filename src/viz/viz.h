// VIZ: the viewer of what the recorder (uop/viz.h) kept, served by the library on 127.0.0.1 or dumped as a folder that
// opens from disk. The page and its scripts are compiled into the library (src/viz/web/, and the graph layout library
// from npm when the build found it: cmake/embed_viz.cmake).
#pragma once
#include <string>

namespace tg::viz {

// Starts (or restarts on another port) the server: port 0 lets the system pick one. Returns the port bound.
// Throws tg::Error (TG_ERROR_IO) naming the port when it is taken.
int serve(int port);
void stop();
// Writes index.html, the scripts and data.js (the recorded data) into `dir`, created if missing.
void dump(const std::string& dir);
// The HTTP side as a function, for tests: status, content type and body for a GET of `path`.
struct Page {
  int status;
  std::string type, body;
};
Page route(const std::string& path);

}  // namespace tg::viz
