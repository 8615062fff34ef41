// Credentials: what the catalog keeps of a user's password, never the password itself: a
// SCRAM-SHA-256 verifier (salt, iterations, StoredKey, ServerKey; RFC 5802 / RFC 7677) and
// md5(password || user), as PostgreSQL's pg_authid does. Also the digests both the catalog
// and the client authentication (pgwire/auth.h) compute. Stateless; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace wattdb::master::auth {

struct ScramVerifier {
  std::string salt;  // raw bytes
  int iterations = 4096;
  std::string stored_key, server_key;  // raw 32-byte digests
};

struct Credentials {
  std::string user;
  ScramVerifier scram;
  std::string md5;  // hex md5(password || user), as pg_authid keeps it
};

// Verifiers for `password` (a fresh random salt for SCRAM).
Credentials MakeCredentials(const std::string& user, const std::string& password);
// Serialized form for the catalog, and back.
std::string EncodeCredentials(const Credentials& c);
Result<Credentials> DecodeCredentials(std::string_view in);

// The SCRAM verifier of `password` with `salt` (raw bytes) and `iterations`.
ScramVerifier MakeVerifier(const std::string& password, std::string salt, int iterations);

std::string Sha256(std::string_view d);
std::string Hmac(std::string_view key, std::string_view d);  // HMAC-SHA-256
std::string RandomBytes(size_t n);
std::string Md5Hex(std::string_view data);

}  // namespace wattdb::master::auth
