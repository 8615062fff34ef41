#include "master/pgwire/auth.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>

#include "common/bytes.h"

namespace wattdb::master::auth {

namespace {

std::string Sha256(std::string_view d) {
  unsigned char out[32];
  unsigned int n = 0;
  EVP_Digest(d.data(), d.size(), out, &n, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<char*>(out), n);
}

std::string Hmac(std::string_view key, std::string_view d) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(d.data()),
       d.size(), out, &n);
  return std::string(reinterpret_cast<char*>(out), n);
}

std::string Random(size_t n) {
  std::string s(n, '\0');
  RAND_bytes(reinterpret_cast<unsigned char*>(s.data()), static_cast<int>(n));
  return s;
}

ScramVerifier MakeVerifier(const std::string& password, std::string salt, int iterations) {
  ScramVerifier v;
  v.salt = std::move(salt);
  v.iterations = iterations;
  unsigned char salted[32];
  PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                    reinterpret_cast<const unsigned char*>(v.salt.data()), static_cast<int>(v.salt.size()),
                    iterations, EVP_sha256(), 32, salted);
  std::string sp(reinterpret_cast<char*>(salted), 32);
  v.stored_key = Sha256(Hmac(sp, "Client Key"));
  v.server_key = Hmac(sp, "Server Key");
  return v;
}

// The value of attribute `name` ("r", "s", ...) in a SCRAM message, or nullopt.
std::optional<std::string> Attr(std::string_view msg, char name) {
  size_t i = 0;
  while (i < msg.size()) {
    size_t end = msg.find(',', i);
    if (end == std::string_view::npos) end = msg.size();
    std::string_view part = msg.substr(i, end - i);
    if (part.size() >= 2 && part[0] == name && part[1] == '=') return std::string(part.substr(2));
    i = end + 1;
  }
  return std::nullopt;
}

Status Malformed(const char* what) {
  return Status::Sql("08P01", fmt::format("malformed SCRAM message ({})", what));
}

}  // namespace

std::string Base64Encode(std::string_view raw) {
  std::string out(4 * ((raw.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(raw.data()), static_cast<int>(raw.size()));
  out.resize(n);
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return Status::Sql("08P01", "invalid base64");
  std::string out(text.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return Status::Sql("08P01", "invalid base64");
  size_t pad = 0;
  if (!text.empty() && text.back() == '=') pad++;
  if (text.size() > 1 && text[text.size() - 2] == '=') pad++;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
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

Credentials MakeCredentials(const std::string& user, const std::string& password) {
  Credentials c;
  c.user = user;
  c.scram = MakeVerifier(password, Random(16), 4096);
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
  if (!r.U8(&v) || v != 1 || !r.Str(&c.user) || !r.Str(&c.scram.salt) || !r.VarU64(&it) || it == 0 ||
      it > 10000000 || !r.Str(&c.scram.stored_key) || !r.Str(&c.scram.server_key) || !r.Str(&c.md5) || !r.empty()) {
    return Status::Corruption("user record does not decode");
  }
  c.scram.iterations = static_cast<int>(it);
  return c;
}

bool CheckMd5Response(const Credentials& c, std::string_view salt, std::string_view response) {
  std::string expect = "md5" + Md5Hex(c.md5 + std::string(salt));
  return response.size() == expect.size() && CRYPTO_memcmp(response.data(), expect.data(), expect.size()) == 0;
}

ScramExchange::ScramExchange(std::optional<Credentials> creds) : creds_(std::move(creds)) {
  verifier_ = creds_ ? creds_->scram : MakeVerifier(Random(16), Random(16), 4096);
}

Result<std::string> ScramExchange::First(std::string_view client_first) {
  // gs2-header: "n,," (no channel binding) or "y,," (client could, server does not offer it).
  if (client_first.size() < 3 || (client_first[0] != 'n' && client_first[0] != 'y') || client_first[1] != ',') {
    if (!client_first.empty() && client_first[0] == 'p') {
      return Status::Sql("08P01", "SCRAM channel binding is not supported");
    }
    return Malformed("gs2 header");
  }
  size_t comma = client_first.find(',', 2);
  if (comma == std::string_view::npos) return Malformed("gs2 header");
  gs2_header_ = std::string(client_first.substr(0, comma + 1));
  client_first_bare_ = std::string(client_first.substr(comma + 1));
  auto cnonce = Attr(client_first_bare_, 'r');
  if (!cnonce || cnonce->empty()) return Malformed("client nonce");
  nonce_ = *cnonce + Base64Encode(Random(18));
  server_first_ = fmt::format("r={},s={},i={}", nonce_, Base64Encode(verifier_.salt), verifier_.iterations);
  return server_first_;
}

Result<std::string> ScramExchange::Final(std::string_view client_final) {
  size_t p = client_final.rfind(",p=");
  if (p == std::string_view::npos) return Malformed("proof");
  std::string without_proof(client_final.substr(0, p));
  auto binding = Attr(without_proof, 'c');
  auto nonce = Attr(without_proof, 'r');
  if (!binding || *binding != Base64Encode(gs2_header_)) return Malformed("channel binding");
  if (!nonce || *nonce != nonce_) return Malformed("nonce");
  ASSIGN_OR_RETURN(std::string proof, Base64Decode(client_final.substr(p + 3)));
  std::string auth_message = client_first_bare_ + "," + server_first_ + "," + without_proof;
  std::string signature = Hmac(verifier_.stored_key, auth_message);
  bool ok = creds_.has_value() && proof.size() == signature.size();
  if (ok) {
    std::string client_key(proof.size(), '\0');
    for (size_t i = 0; i < proof.size(); i++) client_key[i] = static_cast<char>(proof[i] ^ signature[i]);
    std::string stored = Sha256(client_key);
    ok = CRYPTO_memcmp(stored.data(), verifier_.stored_key.data(), stored.size()) == 0;
  }
  if (!ok) {
    return Status::Sql("28P01", fmt::format("password authentication failed for user \"{}\"",
                                            creds_ ? creds_->user : std::string("?")));
  }
  return "v=" + Base64Encode(Hmac(verifier_.server_key, auth_message));
}

}  // namespace wattdb::master::auth
