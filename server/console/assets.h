// The console's static files (index.html, console.js, console.css), compiled
// into the binary from server/console/assets/ by cmake/embed_assets.cmake so
// that the server needs no files and no network at run time.
#ifndef VIPU_SERVER_CONSOLE_ASSETS_H_
#define VIPU_SERVER_CONSOLE_ASSETS_H_

#include <cstddef>
#include <string_view>

namespace vipu::server {

struct Asset {
  const char* path;  // "/console.js"; "/" is index.html
  const char* content_type;
  const unsigned char* data;
  size_t size;
};

// The asset served at `path`, or nullptr.
const Asset* FindAsset(std::string_view path);

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONSOLE_ASSETS_H_
