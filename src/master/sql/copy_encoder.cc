#include "master/sql/copy_encoder.h"

#include <algorithm>

#include "common/codec.h"
#include "common/sqlstate.h"
#include "master/sql/executor.h"

namespace wattdb::master {

namespace {

// Types converted straight from the text (the rest through Value::FromText).
bool Direct(const SqlType& t) {
  switch (t.id) {
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kTimestamp:
    case TypeId::kNumeric:
      return true;
    case TypeId::kText:
      return t.max_len == 0;
    default:
      return false;
  }
}

}  // namespace

CopyEncoder::CopyEncoder(const TableSchema& table, const std::vector<int>& cols,
                         const std::vector<int>& generated)
    : table_(table),
      source_(table.columns.size(), Source::kNull),
      field_(table.columns.size(), -1),
      parsed_(table.columns.size()) {
  for (size_t f = 0; f < cols.size(); f++) {
    source_[cols[f]] = Source::kField;
    field_[cols[f]] = static_cast<int>(f);
  }
  for (int c : generated) source_[c] = Source::kGenerated;
}

Status CopyEncoder::Parse(int c, std::string_view text, Parsed* p) const {
  const SqlType& t = table_.columns[c].type;
  p->null = false;
  p->boxed = !Direct(t);
  switch (p->boxed ? TypeId::kNull : t.id) {
    case TypeId::kInt32:
    case TypeId::kInt64: {
      ASSIGN_OR_RETURN(p->i, ParseIntText(text, t));
      return Status::OK();
    }
    case TypeId::kTimestamp: {
      ASSIGN_OR_RETURN(p->i, ParseTimestamp(text));
      return Status::OK();
    }
    case TypeId::kNumeric: {
      ASSIGN_OR_RETURN(p->d, ParseNumericText(text, t));
      return Status::OK();
    }
    case TypeId::kText:
      p->s = text;
      return Status::OK();
    default: {
      ASSIGN_OR_RETURN(p->v, Value::FromText(text, t));
      return Status::OK();
    }
  }
}

void CopyEncoder::AppendKey(int c, const Parsed& p, std::string* key) const {
  if (p.null) return;  // key columns are NOT NULL; a NULL is refused before
  if (p.boxed) return EncodeKeyValue(p.v, key);
  switch (table_.columns[c].type.id) {
    case TypeId::kNumeric:
      return EncodeDecimalKey(p.d, key);
    case TypeId::kText:
      return EncodeKeyText(p.s, key);
    default:
      return EncodeKeyInt(p.i, key);
  }
}

void CopyEncoder::AppendRow(int c, const Parsed& p, std::string* row) const {
  if (p.null) return AppendRowNull(row);
  if (p.boxed) return AppendRowValue(p.v, row);
  TypeId t = table_.columns[c].type.id;
  switch (t) {
    case TypeId::kNumeric:
      return AppendRowNumeric(p.d, row);
    case TypeId::kText:
      return AppendRowText(p.s, row);
    default:
      return AppendRowInt(t, p.i, row);
  }
}

Status CopyEncoder::Encode(const CopyRows& rows, size_t r, const GenerateFn& generate,
                           std::string* key, std::string* row, size_t* field) {
  size_t first = rows.row_begin(r);
  size_t whole_row = rows.row_end(r) - first;
  for (size_t c = 0; c < table_.columns.size(); c++) {
    Parsed& p = parsed_[c];
    p.null = true;
    switch (source_[c]) {
      case Source::kField: {
        size_t f = first + field_[c];
        if (rows.null(f)) break;
        Status st = Parse(static_cast<int>(c), rows.text(f), &p);
        if (!st.ok()) {
          *field = field_[c];
          return st;
        }
        break;
      }
      case Source::kNull:
        break;
      case Source::kGenerated: {
        *field = kNoField;
        ASSIGN_OR_RETURN(p.v, generate(static_cast<int>(c)));
        p.null = p.v.is_null();
        p.boxed = true;
        break;
      }
    }
  }
  for (size_t c = 0; c < table_.columns.size(); c++) {
    if (table_.columns[c].not_null && parsed_[c].null) {
      *field = whole_row;
      return Status::Sql(sqlstate::kNotNullViolation, Executor::NotNullMessage(table_, c));
    }
  }
  key->clear();
  for (int c : table_.key_columns) AppendKey(c, parsed_[c], key);
  row->clear();
  AppendRowHeader(table_.columns.size(), row);
  for (size_t c = 0; c < table_.columns.size(); c++)
    AppendRow(static_cast<int>(c), parsed_[c], row);
  return Status::OK();
}

}  // namespace wattdb::master
