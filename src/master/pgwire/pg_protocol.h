// PostgreSQL frontend/backend protocol v3: message encoding for the backend side.
// Reference: PostgreSQL documentation, "Frontend/Backend Protocol" (message formats).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/value.h"

namespace wattdb::master::pg {

constexpr int32_t kProtocolV3 = 196608;  // 3.0
constexpr int32_t kSslRequest = 80877103;
constexpr int32_t kGssEncRequest = 80877104;
constexpr int32_t kCancelRequest = 80877102;
constexpr uint32_t kMaxMessage = 64u << 20;  // larger frontend messages are refused

// Builds backend messages into one output buffer.
class MessageWriter {
 public:
  void AuthenticationOk();
  // AuthenticationXXX request `code` (5 = MD5Password, 10 = SASL, 11 = SASLContinue,
  // 12 = SASLFinal) followed by `data`.
  void Authentication(int32_t code, std::string_view data);
  void ParameterStatus(std::string_view name, std::string_view value);
  void BackendKeyData(int32_t pid, int32_t secret);
  void ReadyForQuery(char status);
  // `formats`: per-column format codes (0 text, 1 binary); empty = all text.
  void RowDescription(const std::vector<std::string>& names, const std::vector<SqlType>& types,
                      const std::vector<int16_t>& formats = {});
  void ParameterDescription(const std::vector<SqlType>& types);
  // Messages without a body: ParseComplete '1', BindComplete '2', CloseComplete '3',
  // NoData 'n', PortalSuspended 's'.
  void Simple(char type);
  // CopyInResponse 'G' / CopyOutResponse 'H' announcing `ncols` text-format columns.
  void CopyResponse(char type, int ncols);
  void CopyData(std::string_view data);
  // `cells`: one entry per column; nullptr = NULL.
  void DataRow(const std::vector<const std::string*>& cells);
  void CommandComplete(std::string_view tag);
  void EmptyQueryResponse();
  // Error ('E') or notice ('N') with severity, SQLSTATE, message and optional position.
  void ErrorOrNotice(char type, std::string_view severity, std::string_view sqlstate,
                     std::string_view message, int position);

  std::string& buffer() { return out_; }
  void Clear() { out_.clear(); }

 private:
  void Begin(char type);
  void End();
  void I16(int16_t v);
  void I32(int32_t v);
  void Cstr(std::string_view s);

  std::string out_;
  size_t start_ = 0;
};

// Parses the key/value pairs of a StartupMessage body (after the protocol version).
Result<std::vector<std::pair<std::string, std::string>>> ParseStartupParams(std::string_view body);
// The settings of a startup packet's `options` parameter (libpq's PGOPTIONS): `-c name=value`,
// `-cname=value` or `--name=value`, separated by blanks; a backslash keeps the next character
// (`-c default_transaction_isolation=repeatable\ read`). 22023 for anything else.
Result<std::vector<std::pair<std::string, std::string>>> ParseStartupOptions(
    std::string_view options);

}  // namespace wattdb::master::pg
