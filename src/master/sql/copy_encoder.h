// CopyEncoder: a COPY FROM row's text fields -> the row's key and stored encoding, the bytes
// EncodeKey and EncodeRow make of the row's Values, without making a Value of each field
// (integers, timestamps, numerics and unbounded text are converted straight from the text;
// other types go through Value::FromText).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/decimal.h"
#include "common/schema.h"
#include "common/status.h"
#include "common/value.h"
#include "master/sql/copy_rows.h"

namespace wattdb::master {

class CopyEncoder {
 public:
  // The value, for one row, of a column the COPY does not name and the table generates: the
  // hidden row id, a serial's next number, a DEFAULT.
  using GenerateFn = std::function<Result<Value>(int column)>;

  // `cols`: the table column of each field of a row, in order; `generated`: the columns not
  // among them that get a generated value (the others are NULL). Borrows `table`.
  CopyEncoder(const TableSchema& table, const std::vector<int>& cols,
              const std::vector<int>& generated);

  static constexpr size_t kNoField = SIZE_MAX;
  // Encodes row `r` of `rows` (of exactly cols.size() fields) into `*key` and `*row`
  // (replacing them). On error, `*field` is the field at fault, cols.size() for the row as a
  // whole (a NULL in a NOT NULL column) or kNoField (generating a value failed): the caller
  // names the input position.
  Status Encode(const CopyRows& rows, size_t r, const GenerateFn& generate, std::string* key,
                std::string* row, size_t* field);

 private:
  enum class Source : uint8_t { kField, kNull, kGenerated };
  struct Parsed {  // one column's value for the row being encoded
    bool null = true;
    bool boxed = false;  // the value is `v` (a type not converted directly, a generated value)
    int64_t i = 0;       // integers, timestamps
    Decimal d;           // numerics
    std::string_view s;  // unbounded text
    Value v;
  };
  // Parses `text` as column `c`'s value into `*p`.
  Status Parse(int c, std::string_view text, Parsed* p) const;
  void AppendKey(int c, const Parsed& p, std::string* key) const;
  void AppendRow(int c, const Parsed& p, std::string* row) const;

  const TableSchema& table_;
  std::vector<Source> source_;  // per table column
  std::vector<int> field_;      // per table column: its field (Source::kField)
  std::vector<Parsed> parsed_;  // per table column, reused row after row
};

}  // namespace wattdb::master
