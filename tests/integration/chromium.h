// Headless Chromium for the console's browser tests, driven over the
// DevTools protocol: a real browser process on its own profile, a minimal
// WebSocket client (RFC 6455 text frames) to its page target, and the few
// calls the tests need: evaluate an expression, wait for one to hold, take a
// screenshot. Header-only, like daemon_process.h.
#ifndef VIPU_TESTS_INTEGRATION_CHROMIUM_H_
#define VIPU_TESTS_INTEGRATION_CHROMIUM_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "tests/integration/daemon_process.h"
#include "tests/integration/harness.h"

namespace vipu::testing {

// The Chromium binary from Debian's package, or "" when it is not installed.
inline std::string ChromiumBinary() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

// `text` as a JSON string literal.
inline std::string JsonString(const std::string& text) { return nlohmann::json(text).dump(); }

// The body of GET http://127.0.0.1:port/path, read up to its Content-Length
// (Chromium's DevTools server keeps the connection open), or "" once
// `timeout` passes.
inline std::string HttpGetWithDeadline(int port, const std::string& path, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  std::string response;
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(request.size())) {
    close(fd);
    return "";
  }
  for (;;) {
    const size_t head = response.find("\r\n\r\n");
    if (head != std::string::npos) {
      const std::string marker = "Content-Length:";
      const size_t at = response.find(marker);
      size_t length = 0;
      if (at != std::string::npos && at < head &&
          absl::SimpleAtoi(absl::StripAsciiWhitespace(response.substr(
                               at + marker.size(), response.find("\r\n", at) - at - marker.size())),
                           &length) &&
          response.size() >= head + 4 + length) {
        close(fd);
        return response.substr(head + 4, length);
      }
    }
    const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    pollfd p{fd, POLLIN, 0};
    char buf[8192];
    if (ms <= 0 || poll(&p, 1, static_cast<int>(ms)) <= 0) break;
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    response.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return "";
}

class Chromium {
 public:
  // Starts `chromium --headless` on `url` and connects to its page. nullptr
  // (with *error set) when the browser does not come up within a minute.
  static std::unique_ptr<Chromium> Start(const std::string& url,
                                         const std::vector<std::string>& extra_flags,
                                         std::string* error) {
    std::unique_ptr<Chromium> c(new Chromium());
    c->profile_ = MakeTempDir();
    std::vector<std::string> argv = {ChromiumBinary(),
                                     "--headless",
                                     "--no-sandbox",
                                     "--disable-gpu",
                                     "--disable-quic",
                                     "--no-first-run",
                                     "--disable-background-networking",
                                     "--disable-component-update",
                                     "--disable-sync",
                                     "--disable-dev-shm-usage",
                                     "--hide-scrollbars",
                                     "--window-size=1500,1400",
                                     "--user-data-dir=" + c->profile_,
                                     "--remote-debugging-port=0"};
    argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
    argv.push_back(url);
    c->daemon_ = std::make_unique<Daemon>(argv, c->profile_ + "/chromium.log");
    // Chromium writes its DevTools port to the profile once it listens.
    const std::string port_file = c->profile_ + "/DevToolsActivePort";
    int port = 0;
    WaitFor(
        [&] {
          std::ifstream in(port_file);
          std::string line;
          return std::getline(in, line) && absl::SimpleAtoi(line, &port) && port > 0;
        },
        absl::Seconds(60));
    if (port == 0) {
      *error =
          "chromium did not open its DevTools port: " + ReadFile(c->profile_ + "/chromium.log");
      return nullptr;
    }
    std::string page;
    WaitFor(
        [&] {
          const std::string list = HttpGetWithDeadline(port, "/json/list", absl::Seconds(5));
          const size_t at = list.find("/devtools/page/");
          if (at == std::string::npos) return false;
          page = list.substr(at, list.find('"', at) - at);
          return true;
        },
        absl::Seconds(30));
    if (page.empty()) {
      *error = "chromium has no page target";
      return nullptr;
    }
    if (!c->Connect(port, page)) {
      *error = "cannot open the DevTools WebSocket " + page;
      return nullptr;
    }
    return c;
  }

  ~Chromium() {
    if (fd_ >= 0) close(fd_);
    daemon_.reset();
    RemoveTree(profile_);
  }

  // Sends a DevTools command and returns its whole answer (a JSON object),
  // or "" after `timeout`. Events arriving meanwhile are skipped.
  std::string Call(const std::string& method, const std::string& params_json,
                   absl::Duration timeout = absl::Seconds(30)) {
    const int id = ++next_id_;
    if (!SendText(absl::StrCat("{\"id\":", id, ",\"method\":\"", method,
                               "\",\"params\":", params_json, "}"))) {
      return "";
    }
    const std::string marker = absl::StrCat("{\"id\":", id, ",");
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      std::optional<std::string> message = Receive(deadline);
      if (!message) return "";
      if (message->rfind(marker, 0) == 0) return *message;
    }
    return "";
  }

  // Runtime.evaluate of `expression` (awaiting a promise); the answer.
  std::string Evaluate(const std::string& expression) {
    return Call("Runtime.evaluate", absl::StrCat("{\"expression\":", JsonString(expression),
                                                 ",\"returnByValue\":true,\"awaitPromise\":true}"));
  }
  bool True(const std::string& expression) {
    return Evaluate(absl::StrCat("!!(", expression, ")")).find("\"value\":true") !=
           std::string::npos;
  }
  // Waits until `expression` is truthy in the page, or `timeout`.
  bool WaitUntil(const std::string& expression, absl::Duration timeout) {
    return WaitFor([&] { return True(expression); }, timeout);
  }
  // `expression` (a promise is awaited) as a string.
  std::string String(const std::string& expression) {
    const std::string answer =
        Evaluate(absl::StrCat("Promise.resolve(", expression, ").then((v) => String(v))"));
    const std::string marker = "\"value\":\"";
    const size_t at = answer.find(marker);
    if (at == std::string::npos) return "";
    std::string out;
    for (size_t i = at + marker.size(); i < answer.size() && answer[i] != '"'; ++i) {
      if (answer[i] == '\\' && i + 1 < answer.size()) ++i;
      out.push_back(answer[i]);
    }
    return out;
  }
  // A PNG of the whole page written to `path`; false on failure.
  bool Screenshot(const std::string& path) {
    const std::string answer =
        Call("Page.captureScreenshot", "{\"format\":\"png\",\"captureBeyondViewport\":true}");
    const std::string marker = "\"data\":\"";
    const size_t at = answer.find(marker);
    if (at == std::string::npos) return false;
    const size_t end = answer.find('"', at + marker.size());
    std::string png;
    if (!absl::Base64Unescape(answer.substr(at + marker.size(), end - at - marker.size()), &png)) {
      return false;
    }
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << png;
    return png.size() > 8;
  }
  std::string log() const { return ReadFile(profile_ + "/chromium.log"); }

 private:
  Chromium() = default;

  bool Connect(int port, const std::string& path) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return false;
    const std::string request = absl::StrCat(
        "GET ", path, " HTTP/1.1\r\nHost: 127.0.0.1:", port,
        "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
    if (!WriteAll(request)) return false;
    std::string head;
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (head.find("\r\n\r\n") == std::string::npos) {
      char c;
      if (!ReadExactly(&c, 1, deadline)) return false;
      head.push_back(c);
    }
    return head.rfind("HTTP/1.1 101", 0) == 0;
  }

  bool WriteAll(const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  bool ReadExactly(char* out, size_t n, absl::Time deadline) {
    size_t got = 0;
    while (got < n) {
      const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
      if (ms <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(ms)) <= 0) return false;
      const ssize_t r = read(fd_, out + got, n - got);
      if (r <= 0) return false;
      got += static_cast<size_t>(r);
    }
    return true;
  }

  // A client frame: FIN, text, masked (RFC 6455 5.3 requires the mask).
  bool SendText(const std::string& payload) {
    std::string frame;
    frame.push_back(static_cast<char>(0x81));
    const uint64_t n = payload.size();
    if (n < 126) {
      frame.push_back(static_cast<char>(0x80 | n));
    } else if (n < 65536) {
      frame.push_back(static_cast<char>(0x80 | 126));
      frame.push_back(static_cast<char>(n >> 8));
      frame.push_back(static_cast<char>(n & 0xff));
    } else {
      frame.push_back(static_cast<char>(0x80 | 127));
      for (int shift = 56; shift >= 0; shift -= 8) frame.push_back(static_cast<char>(n >> shift));
    }
    const char mask[4] = {0x12, 0x34, 0x56, 0x78};
    frame.append(mask, 4);
    for (size_t i = 0; i < payload.size(); ++i) frame.push_back(payload[i] ^ mask[i % 4]);
    return WriteAll(frame);
  }

  // The next whole text message (continuations joined), or nullopt.
  std::optional<std::string> Receive(absl::Time deadline) {
    std::string message;
    for (;;) {
      unsigned char head[2];
      if (!ReadExactly(reinterpret_cast<char*>(head), 2, deadline)) return std::nullopt;
      uint64_t n = head[1] & 0x7f;
      if (n == 126 || n == 127) {
        unsigned char ext[8];
        const size_t len = n == 126 ? 2 : 8;
        if (!ReadExactly(reinterpret_cast<char*>(ext), len, deadline)) return std::nullopt;
        n = 0;
        for (size_t i = 0; i < len; ++i) n = (n << 8) | ext[i];
      }
      std::string payload(n, '\0');
      if (n > 0 && !ReadExactly(payload.data(), n, deadline)) return std::nullopt;
      const int opcode = head[0] & 0x0f;
      if (opcode == 0x8) return std::nullopt;        // close
      if (opcode == 0x9 || opcode == 0xa) continue;  // ping / pong
      message += payload;
      if (head[0] & 0x80) return message;
    }
  }

  std::string profile_;
  std::unique_ptr<Daemon> daemon_;
  int fd_ = -1;
  int next_id_ = 0;
};

}  // namespace vipu::testing

#endif  // VIPU_TESTS_INTEGRATION_CHROMIUM_H_
