// tg_viz_*: the recorder's switches, the viewer's server and its dumped folder (docs/viz.md).
#include "api/api.h"
#include "uop/viz.h"
#include "viz/viz.h"

using namespace tg;

extern "C" {

tg_status tg_viz_enable(int on) {
  return api::call([&] { viz::enable(on != 0); });
}
int tg_viz_enabled(void) { return viz::on() ? 1 : 0; }
tg_status tg_viz_set_capacity(size_t realizes) {
  return api::call([&] {
    TG_ARG(realizes >= 1 && realizes <= 1000000, "viz_set_capacity: realizes must be in [1, 1000000], not " + std::to_string(realizes));
    viz::set_capacity(realizes);
  });
}
tg_status tg_viz_clear(void) {
  return api::call([] { viz::clear(); });
}
tg_status tg_viz_serve(int port, int* bound_port) {
  return api::call([&] {
    int p = viz::serve(port);
    if (bound_port) *bound_port = p;
  });
}
tg_status tg_viz_stop(void) {
  return api::call([] { viz::stop(); });
}
tg_status tg_viz_dump(const char* dir) {
  return api::call([&] {
    TG_ARG(dir && *dir, "viz_dump: dir is NULL or empty");
    viz::dump(dir);
  });
}
int64_t tg_viz_json(const char* route, char* buf, size_t size) {
  return api::text_result(buf, size, "viz_json", [&] {
    TG_ARG(route, "viz_json: route is NULL");
    std::string p = route;
    TG_ARG(p.rfind("/api/", 0) == 0, "viz_json: '" + p.substr(0, 80) + "' is not an /api/ path");
    viz::Page page = viz::route(p);
    TG_ARG(page.status == 200, "viz_json: nothing at '" + p.substr(0, 80) + "' (an unknown route, or a kernel or realize no longer kept)");
    return page.body;
  });
}

}  // extern "C"
