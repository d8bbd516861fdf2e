// VIZ's HTTP/1.1 server: loopback only, GET and HEAD only, one request per connection, one thread with a poll() loop.
// It is written to survive a hostile local client (or a web page the user visits) rather than to be fast: every limit
// is a constant at the top of http.cpp, and the request path is made safe before any handler sees it.
#pragma once
#include <functional>
#include <memory>
#include <string>

namespace tg::viz {

struct HttpResponse {
  int status = 200;  // 200..599 except 204 and 304 (no body framing for those); anything else is sent as 500
  std::string content_type = "text/plain";  // printable ASCII; anything else is sent as application/octet-stream
  std::string body;
};

// method: "GET" or "HEAD" (for HEAD the server sends the headers of the response the handler returns, without its body).
// path: the request target's path, percent-decoded once, query string removed. It starts with '/' and never holds a
// NUL, a control character, a backslash, "//", or a "." or ".." segment: such requests get 404 before the handler.
// Called on the server thread, one request at a time, so a slow handler delays every client. An exception it throws is
// answered with a 500 that tells nothing about it.
using HttpHandler = std::function<HttpResponse(const std::string& method, const std::string& path)>;

class HttpServer {
 public:
  // Binds 127.0.0.1:port only (port 0: the kernel picks one; see port()) and serves on a thread of its own until stop().
  // On failure returns null and sets *err (when err is not null) to a message for the user, e.g.
  // "VIZ: port 8000 on 127.0.0.1 is in use (set VIZ_PORT)". Never throws for a socket error.
  static std::unique_ptr<HttpServer> start(int port, HttpHandler handler, std::string* err);
  int port() const;  // the bound port; thread-safe
  // Closes the listening socket and every connection, and joins the server thread. Idempotent and thread-safe; from
  // inside the handler it only asks the loop to end (the destructor, called elsewhere, joins).
  void stop();
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tg::viz
