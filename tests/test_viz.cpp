// VIZ's recorder and viewer data (src/uop/viz.*, src/viz/): what a realize records, that each rewrite's steps rebuild
// its output, the ring's bound, JIT replays' launches, the routes (and what they refuse), the dumped folder, and the
// server over a socket. The server's hostile-client cases are tests/test_viz_http.cpp.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "helpers.h"
#include "tensor/jit.h"
#include "tensor/tensor.h"
#include "tinygrad.h"
#include "uop/viz.h"
#include "viz/data.h"
#include "viz/viz.h"

using namespace tg;

namespace {
// recording on for one test, and everything it recorded forgotten after
struct Recording {
  bool was = viz::on();
  Recording() {
    viz::clear();
    viz::enable(true);
  }
  ~Recording() {
    viz::enable(was);
    viz::clear();
    viz::set_capacity(64);
  }
};

Tensor plus(const Tensor& t, double v) { return t.add(t.full_like(v)); }

Tensor matmul_relu(int n) {
  Tensor a = Tensor::rand({n, n}, dtypes::float32, "CPU"), b = Tensor::rand({n, n}, dtypes::float32, "CPU");
  return a.matmul(b).relu();
}

std::string http_get(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET, a.sin_port = htons(uint16_t(port)), a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return close(fd), "";
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  EXPECT_EQ(send(fd, req.data(), req.size(), MSG_NOSIGNAL), ssize_t(req.size()));
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, size_t(n));
  close(fd);
  return out;
}
}  // namespace

TEST(Viz, OffRecordsNothing) {
  bool was = viz::on();
  viz::enable(false);
  viz::clear();
  matmul_relu(16).realize();
  EXPECT_TRUE(viz::snapshot().realizes.empty());
  viz::enable(was);
}

// Every recorded rewrite's steps, replayed from its input as the viewer does, end at its output: the steps are the
// rewrite, not a sample of it.
TEST(Viz, StepsRebuildEachRewrite) {
  Recording rec;
  Tensor y = matmul_relu(64);
  y.realize();
  viz::Snapshot s = viz::snapshot();
  ASSERT_FALSE(s.realizes.empty());
  size_t kernels = 0, with_steps = 0, rules_located = 0;
  for (auto& r : s.realizes)
    for (auto& k : r->kernels) {
      EXPECT_FALSE(k->src.empty());
      if (k->rewrites.size() == 1) continue;  // compiled before this test (rand's kernels): its AST and source only
      kernels++;
      EXPECT_EQ(k->rewrites.front().name, "ast");
      EXPECT_EQ(k->rewrites.back().name, "linearize");
      for (auto& w : k->rewrites) {
        ASSERT_TRUE(w.input && w.output) << w.name;
        if (w.steps.empty() || w.dropped) continue;
        with_steps++;
        UOpMap<UOpRef> m;
        for (auto& st : w.steps) {
          m[st.before] = st.after;
          if (!st.rules->loc[st.rule].empty()) rules_located++;
        }
        UOpRef cur = viz::replay(w.input, m);
        EXPECT_EQ(cur.get(), w.output.get()) << k->name << " " << w.name << ": the steps do not rebuild the output";
      }
    }
  EXPECT_GE(kernels, 1u);
  EXPECT_GE(with_steps, 2u);
  EXPECT_GT(rules_located, 0u) << "no rule named its source line";
  // the matmul's kernel has the heuristics' opts and an "opts" stage
  bool opts = false;
  for (auto& r : s.realizes)
    for (auto& k : r->kernels)
      if (!k->opts.empty())
        for (auto& w : k->rewrites) opts |= w.name == "opts";
  EXPECT_TRUE(opts);
}

TEST(Viz, CapacityBoundsTheRing) {
  Recording rec;
  viz::set_capacity(3);
  for (int i = 0; i < 8; i++) plus(Tensor::full({4}, double(i), dtypes::float32, "CPU"), 1.0).realize();
  viz::Snapshot s = viz::snapshot();
  ASSERT_EQ(s.realizes.size(), 3u);
  EXPECT_LT(s.realizes[0]->id, s.realizes[2]->id);  // the newest kept, oldest first
}

TEST(Viz, JitReplaysRecordLaunches) {
  Recording rec;
  TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{plus(in[0].mul(in[0].full_like(2.0)), 1.0).relu()}; });
  for (int i = 0; i < 4; i++) jit({Tensor::full({32}, double(i), dtypes::float32, "CPU")});
  viz::Snapshot s = viz::snapshot();
  size_t replays = 0, launches = 0;
  for (auto& r : s.realizes)
    if (r->name.rfind("jit replay", 0) == 0) {
      replays++;
      for (auto& l : r->launches) {
        launches++;
        EXPECT_GE(l.kernel, 0);
        EXPECT_LE(l.st_us, l.en_us);
      }
    }
  EXPECT_EQ(replays, 2u);  // calls 3 and 4 replay
  EXPECT_GE(launches, 2u);
  std::string tl = viz::timeline_json(s);
  EXPECT_NE(tl.find("\"launches\":[{"), std::string::npos);
  EXPECT_NE(tl.find("\"memory\":[{"), std::string::npos);
}

TEST(Viz, RoutesAnswerOnlyWhatTheyKnow) {
  Recording rec;
  matmul_relu(32).realize();
  viz::Snapshot s = viz::snapshot();
  ASSERT_FALSE(s.realizes.back()->kernels.empty());
  int kid = s.realizes.back()->kernels[0]->id, rid = s.realizes.back()->id;
  EXPECT_EQ(viz::route("/").status, 200);
  EXPECT_NE(viz::route("/").body.find("<html"), std::string::npos);
  EXPECT_EQ(viz::route("/viz.js").status, 200);
  EXPECT_EQ(viz::route("/dagre.min.js").status, 200);
  EXPECT_EQ(viz::route("/data.js").body, "");
  EXPECT_EQ(viz::route("/api/index").status, 200);
  auto k = viz::route("/api/kernel/" + std::to_string(kid));
  EXPECT_EQ(k.status, 200);
  EXPECT_NE(k.body.find("\"src\":"), std::string::npos);
  EXPECT_EQ(viz::route("/api/realize/" + std::to_string(rid)).status, 200);
  for (const char* bad : {"/api/kernel/999999", "/api/kernel/-1", "/api/kernel/1x", "/api/kernel/", "/api/kernel/99999999999", "/api/realize/abc",
                          "/api/../index.html", "/etc/passwd", "/api", "/api/index/", "/index.html/..", "/viz.js.bak", "/%2e%2e/"})
    EXPECT_EQ(viz::route(bad).status, 404) << bad;
  // the C API refuses the same, with an error
  char buf[16];
  EXPECT_EQ(tg_viz_json("/api/kernel/999999", buf, sizeof buf), -1);
  EXPECT_EQ(tg_viz_json("/index.html", buf, sizeof buf), -1);
  EXPECT_EQ(tg_viz_json(nullptr, buf, sizeof buf), -1);
  EXPECT_GT(tg_viz_json("/api/index", nullptr, 0), 10);
}

TEST(Viz, JsonStringsAreEscaped) {
  EXPECT_EQ(viz::json_str("a\"b\\c\n\x01</script>"), "\"a\\\"b\\\\c\\n\\u0001\\u003c/script>\"");
  EXPECT_EQ(viz::json_str("\xff" "ok \xc3\xa9"), "\"\\ufffdok \xc3\xa9\"");  // bad UTF-8 replaced, good kept
  EXPECT_EQ(viz::json_str("\xe2\x82"), "\"\\ufffd\\ufffd\"");              // a cut sequence
}

TEST(Viz, DumpWritesAFolderThatOpensFromDisk) {
  Recording rec;
  matmul_relu(16).realize();
  std::string dir = std::filesystem::temp_directory_path() / ("tg_viz_dump_" + std::to_string(getpid()));
  ASSERT_EQ(tg_viz_dump((dir + "/nested").c_str()), TG_OK) << tg_last_error_message();
  for (const char* f : {"index.html", "viz.js", "viz.css", "dagre.min.js", "data.js"}) EXPECT_TRUE(std::filesystem::exists(dir + "/nested/" + f)) << f;
  std::ifstream in(dir + "/nested/data.js");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str().rfind("window.TG_VIZ_DATA = {\"index\":", 0), 0u);
  EXPECT_EQ(ss.str().find("</script"), std::string::npos);
  // a folder that can't be made is an error naming it
  std::ofstream(dir + "/file") << "x";
  EXPECT_EQ(tg_viz_dump((dir + "/file/sub").c_str()), TG_ERROR_IO);
  EXPECT_NE(std::string(tg_last_error_message()).find(dir + "/file/sub"), std::string::npos);
  EXPECT_EQ(tg_viz_dump(""), TG_ERROR_INVALID_ARGUMENT);
  std::filesystem::remove_all(dir);
}

TEST(Viz, ServesOverASocketAndNamesATakenPort) {
  Recording rec;
  matmul_relu(16).realize();
  int port = 0;
  ASSERT_EQ(tg_viz_serve(0, &port), TG_OK) << tg_last_error_message();
  ASSERT_GT(port, 0);
  std::string r = http_get(port, "/api/index");
  EXPECT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << r.substr(0, 200);
  EXPECT_NE(r.find("\"kernels\":[{"), std::string::npos);
  EXPECT_EQ(http_get(port, "/%2e%2e/%2e%2e/etc/passwd").rfind("HTTP/1.1 404", 0), 0u);
  // a second server in this process can't take the same port from another socket: bind one ourselves and ask for it
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET, a.sin_port = 0, a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int taken = ntohs(a.sin_port);
  EXPECT_EQ(tg_viz_serve(taken, nullptr), TG_ERROR_IO);
  EXPECT_NE(std::string(tg_last_error_message()).find(std::to_string(taken)), std::string::npos) << tg_last_error_message();
  close(fd);
  EXPECT_EQ(tg_viz_serve(70000, nullptr), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tg_viz_stop(), TG_OK);
  EXPECT_EQ(tg_viz_stop(), TG_OK);
  EXPECT_EQ(http_get(port, "/"), "");  // nothing listens there now
}

// Realizes on several threads while another reads the data: records are whole when seen (TSan runs this too).
TEST(Viz, ThreadsRecordWhileTheViewerReads) {
  Recording rec;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done) {
      viz::Snapshot s = viz::snapshot();
      viz::index_json(s), viz::timeline_json(s);
      for (auto& r : s.realizes)
        for (auto& k : r->kernels) viz::kernel_json(s, k->id);
    }
  });
  std::vector<std::thread> ts;
  for (int t = 0; t < 2; t++)
    ts.emplace_back([t] {
      for (int i = 0; i < 5; i++) plus(Tensor::full({8, 8}, double(t * 10 + i), dtypes::float32, "CPU").sum(std::vector<int64_t>{1}), 3.0).realize();
    });
  for (auto& t : ts) t.join();
  done = true;
  reader.join();
  EXPECT_GE(viz::snapshot().realizes.size(), 10u);
}
