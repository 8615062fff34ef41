#include "master/catalog/credentials.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "common/bytes.h"

namespace wattdb::master::auth {

std::string Sha256(std::string_view d) {
  unsigned char out[32];
  unsigned int n = 0;
  EVP_Digest(d.data(), d.size(), out, &n, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<char*>(out), n);
}

std::string Hmac(std::string_view key, std::string_view d) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(d.data()), d.size(), out, &n);
  return std::string(reinterpret_cast<char*>(out), n);
}

std::string RandomBytes(size_t n) {
  std::string s(n, '\0');
  RAND_bytes(reinterpret_cast<unsigned char*>(s.data()), static_cast<int>(n));
  return s;
}

std::string Md5Hex(std::string_view data) {
  unsigned char out[16];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), out, &n, EVP_md5(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < n; i++) {
    s.push_back(kHex[out[i] >> 4]);
    s.push_back(kHex[out[i] & 15]);
  }
  return s;
}

ScramVerifier MakeVerifier(const std::string& password, std::string salt, int iterations) {
  ScramVerifier v;
  v.salt = std::move(salt);
  v.iterations = iterations;
  unsigned char salted[32];
  PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                    reinterpret_cast<const unsigned char*>(v.salt.data()),
                    static_cast<int>(v.salt.size()), iterations, EVP_sha256(), 32, salted);
  std::string sp(reinterpret_cast<char*>(salted), 32);
  v.stored_key = Sha256(Hmac(sp, "Client Key"));
  v.server_key = Hmac(sp, "Server Key");
  return v;
}

Credentials MakeCredentials(const std::string& user, const std::string& password) {
  Credentials c;
  c.user = user;
  c.scram = MakeVerifier(password, RandomBytes(16), 4096);
  c.md5 = Md5Hex(password + user);
  return c;
}

std::string EncodeCredentials(const Credentials& c) {
  std::string out;
  ByteWriter w(&out);
  w.U8(1);
  w.Str(c.user);
  w.Str(c.scram.salt);
  w.VarU64(static_cast<uint64_t>(c.scram.iterations));
  w.Str(c.scram.stored_key);
  w.Str(c.scram.server_key);
  w.Str(c.md5);
  return out;
}

Result<Credentials> DecodeCredentials(std::string_view in) {
  ByteReader r(in);
  Credentials c;
  uint8_t v;
  uint64_t it;
  if (!r.U8(&v) || v != 1 || !r.Str(&c.user) || !r.Str(&c.scram.salt) || !r.VarU64(&it) ||
      it == 0 || it > 10000000 || !r.Str(&c.scram.stored_key) || !r.Str(&c.scram.server_key) ||
      !r.Str(&c.md5) || !r.empty()) {
    return Status::Corruption("user record does not decode");
  }
  c.scram.iterations = static_cast<int>(it);
  return c;
}

}  // namespace wattdb::master::auth
