#include "rlock/script.hpp"

#include <openssl/evp.h>

#include <array>
#include <stdexcept>

namespace rlock {
namespace {

std::string sha1_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), md.data(), &len, EVP_sha1(), nullptr) != 1) {
    throw std::runtime_error("SHA1 failed");
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(static_cast<std::size_t>(len) * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 0xf];
  }
  return out;
}

}  // namespace

script::script(std::string text) : text_(std::move(text)), sha1_(sha1_hex(text_)) {}

}  // namespace rlock
