#include "master/pgwire/auth.h"

#include <cstring>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "common/sqlstate.h"

namespace wattdb::master::auth {

namespace {

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
  return Status::Sql(sqlstate::kProtocolViolation,
                     fmt::format("malformed SCRAM message ({})", what));
}

}  // namespace

std::string Base64Encode(std::string_view raw) {
  std::string out(4 * ((raw.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(raw.data()),
                          static_cast<int>(raw.size()));
  out.resize(n);
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return Status::Sql(sqlstate::kProtocolViolation, "invalid base64");
  std::string out(text.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0) return Status::Sql(sqlstate::kProtocolViolation, "invalid base64");
  size_t pad = 0;
  if (!text.empty() && text.back() == '=') pad++;
  if (text.size() > 1 && text[text.size() - 2] == '=') pad++;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

bool CheckMd5Response(const Credentials& c, std::string_view salt, std::string_view response) {
  std::string expect = "md5" + Md5Hex(c.md5 + std::string(salt));
  return response.size() == expect.size() &&
         CRYPTO_memcmp(response.data(), expect.data(), expect.size()) == 0;
}

ScramExchange::ScramExchange(std::optional<Credentials> creds) : creds_(std::move(creds)) {
  verifier_ = creds_ ? creds_->scram : MakeVerifier(RandomBytes(16), RandomBytes(16), 4096);
}

Result<std::string> ScramExchange::First(std::string_view client_first) {
  // gs2-header: "n,," (no channel binding) or "y,," (client could, server does not offer it).
  if (client_first.size() < 3 || (client_first[0] != 'n' && client_first[0] != 'y') ||
      client_first[1] != ',') {
    if (!client_first.empty() && client_first[0] == 'p') {
      return Status::Sql(sqlstate::kProtocolViolation, "SCRAM channel binding is not supported");
    }
    return Malformed("gs2 header");
  }
  size_t comma = client_first.find(',', 2);
  if (comma == std::string_view::npos) return Malformed("gs2 header");
  gs2_header_ = std::string(client_first.substr(0, comma + 1));
  client_first_bare_ = std::string(client_first.substr(comma + 1));
  auto cnonce = Attr(client_first_bare_, 'r');
  if (!cnonce || cnonce->empty()) return Malformed("client nonce");
  nonce_ = *cnonce + Base64Encode(RandomBytes(18));
  server_first_ =
      fmt::format("r={},s={},i={}", nonce_, Base64Encode(verifier_.salt), verifier_.iterations);
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
    for (size_t i = 0; i < proof.size(); i++)
      client_key[i] = static_cast<char>(proof[i] ^ signature[i]);
    std::string stored = Sha256(client_key);
    ok = CRYPTO_memcmp(stored.data(), verifier_.stored_key.data(), stored.size()) == 0;
  }
  if (!ok) {
    return Status::Sql(sqlstate::kInvalidPassword,
                       fmt::format("password authentication failed for user \"{}\"",
                                   creds_ ? creds_->user : std::string("?")));
  }
  return "v=" + Base64Encode(Hmac(verifier_.server_key, auth_message));
}

}  // namespace wattdb::master::auth
