// Password authentication of PostgreSQL clients: SCRAM-SHA-256 (RFC 5802 / RFC 7677, as
// PostgreSQL speaks it, without channel binding) and the md5 fallback, against the verifiers
// the catalog keeps (catalog/credentials.h). Stateless helpers plus one per-connection
// exchange object.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "master/catalog/credentials.h"

namespace wattdb::master::auth {

std::string Base64Encode(std::string_view raw);
Result<std::string> Base64Decode(std::string_view text);

// The md5 response a client sends for `salt`: "md5" + md5hex(md5hex(password || user) || salt).
bool CheckMd5Response(const Credentials& c, std::string_view salt, std::string_view response);

// One SCRAM-SHA-256 exchange on the server side. `creds` null: the user is unknown; the
// exchange runs with a made-up verifier and fails at the end, as for a wrong password, so
// that user names cannot be probed.
class ScramExchange {
 public:
  explicit ScramExchange(std::optional<Credentials> creds);
  // client-first-message -> server-first-message. 08P01 on malformed input.
  Result<std::string> First(std::string_view client_first);
  // client-final-message -> server-final-message ("v=..."); 28P01 if the proof is wrong.
  Result<std::string> Final(std::string_view client_final);

 private:
  std::optional<Credentials> creds_;
  ScramVerifier verifier_;
  std::string gs2_header_, client_first_bare_, server_first_, nonce_;
};

}  // namespace wattdb::master::auth
