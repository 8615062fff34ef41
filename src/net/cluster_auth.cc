#include "net/cluster_auth.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/modes.h>
#include <openssl/rand.h>

namespace wattdb::net {

std::string RandomBytes(size_t n) {
  std::string s(n, '\0');
  RAND_bytes(reinterpret_cast<unsigned char*>(s.data()), static_cast<int>(n));
  return s;
}

namespace {

std::string Hex(const std::string& b) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : b) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

Result<std::string> Unhex(const std::string& h, const std::string& path) {
  auto bad = [&] {
    return Status::Corruption(
        fmt::format("cluster key file {} is not {} hex bytes", path, kClusterKeyBytes));
  };
  if (h.size() != 2 * kClusterKeyBytes) return bad();
  std::string out;
  for (size_t i = 0; i < h.size(); i += 2) {
    auto v = [](char c) {
      return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    };
    int hi = v(h[i]), lo = v(h[i + 1]);
    if (hi < 0 || lo < 0) return bad();
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

Result<std::string> ReadKey(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(path);
  std::string line;
  std::getline(in, line);
  return Unhex(line, path);
}

}  // namespace

Result<ClusterKey> ClusterKey::LoadOrCreate(const std::string& path) {
  auto existing = ReadKey(path);
  if (existing.ok()) return ClusterKey(*existing);
  if (!existing.status().IsNotFound()) return existing.status();
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  // Written whole to a private temporary file, then linked into place: link() never
  // replaces, so the first writer wins and nobody reads a half-written key.
  std::string tmp = fmt::format("{}.{}.tmp", path, getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IOError(fmt::format("cannot create {}: {}", tmp, strerror(errno)));
  std::string text = Hex(RandomBytes(kClusterKeyBytes)) + "\n";
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) {
    ::unlink(tmp.c_str());
    return Status::IOError(fmt::format("cannot write {}", tmp));
  }
  int rc = ::link(tmp.c_str(), path.c_str());
  int err = errno;
  ::unlink(tmp.c_str());
  if (rc != 0 && err != EEXIST)
    return Status::IOError(fmt::format("cannot create {}: {}", path, strerror(err)));
  ASSIGN_OR_RETURN(std::string key, ReadKey(path));
  return ClusterKey(std::move(key));
}

struct Mac::Impl {
  EVP_MAC* mac = nullptr;
  EVP_MAC_CTX* ctx = nullptr;
};

Mac::Mac(const std::string& key) : impl_(std::make_unique<Impl>()) {
  impl_->mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  impl_->ctx = EVP_MAC_CTX_new(impl_->mac);
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  EVP_MAC_init(impl_->ctx, reinterpret_cast<const unsigned char*>(key.data()), key.size(), params);
}

Mac::~Mac() {
  EVP_MAC_CTX_free(impl_->ctx);
  EVP_MAC_free(impl_->mac);
}

std::string Mac::Full(const std::string& data) {
  EVP_MAC_init(impl_->ctx, nullptr, 0, nullptr);
  EVP_MAC_update(impl_->ctx, reinterpret_cast<const unsigned char*>(data.data()), data.size());
  unsigned char out[EVP_MAX_MD_SIZE];
  size_t len = 0;
  EVP_MAC_final(impl_->ctx, out, &len, sizeof(out));
  return std::string(reinterpret_cast<char*>(out), len);
}

namespace {

// The AES block function GCM128 calls, on an AES-256-ECB context (AES-NI through EVP).
void EncryptBlock(const unsigned char in[16], unsigned char out[16], const void* key) {
  int len = 0;
  EVP_EncryptUpdate(static_cast<EVP_CIPHER_CTX*>(const_cast<void*>(key)), out, &len, in, 16);
}

}  // namespace

FrameMac::FrameMac(const std::string& key) : block_(EVP_CIPHER_CTX_new()) {
  auto* c = static_cast<EVP_CIPHER_CTX*>(block_);
  EVP_EncryptInit_ex(c, EVP_aes_256_ecb(), nullptr,
                     reinterpret_cast<const unsigned char*>(key.data()), nullptr);
  EVP_CIPHER_CTX_set_padding(c, 0);
  gcm_ = CRYPTO_gcm128_new(c, EncryptBlock);
}

FrameMac::~FrameMac() {
  CRYPTO_gcm128_release(static_cast<GCM128_CONTEXT*>(gcm_));
  EVP_CIPHER_CTX_free(static_cast<EVP_CIPHER_CTX*>(block_));
}

std::array<unsigned char, kFrameMacBytes> FrameMac::Frame(uint64_t seq, const void* hdr,
                                                          size_t nhdr, const void* payload,
                                                          size_t n) {
  std::array<std::string_view, 2> pieces = {std::string_view(static_cast<const char*>(hdr), nhdr),
                                            std::string_view(static_cast<const char*>(payload), n)};
  return Frame(seq, pieces);
}

std::array<unsigned char, kFrameMacBytes> FrameMac::Frame(
    uint64_t seq, std::span<const std::string_view> pieces) {
  auto* g = static_cast<GCM128_CONTEXT*>(gcm_);
  unsigned char iv[12] = {0};
  for (int i = 0; i < 8; i++) iv[4 + i] = static_cast<unsigned char>(seq >> (56 - 8 * i));
  CRYPTO_gcm128_setiv(g, iv, sizeof(iv));  // same key, next nonce
  // Authenticated-only data (no plaintext): GMAC, the tag AES-256-GCM gives such a frame.
  for (std::string_view p : pieces) {
    if (!p.empty())
      CRYPTO_gcm128_aad(g, reinterpret_cast<const unsigned char*>(p.data()), p.size());
  }
  std::array<unsigned char, kFrameMacBytes> r;
  CRYPTO_gcm128_tag(g, r.data(), r.size());
  return r;
}

}  // namespace wattdb::net
