// CopyRows: a piece of COPY FROM data split into rows of fields, flat: the fields' text back to
// back in one buffer (escapes and quotes already resolved), so that a piece of millions of
// fields costs a few allocations, not one per field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wattdb::master {

class CopyRows {
 public:
  // Appends `text` to the field being built.
  void Append(std::string_view text) { bytes_.append(text); }
  void Append(char c) { bytes_.push_back(c); }
  // The field being built ends (NULL if `null`: its text is dropped); the next one starts empty.
  void EndField(bool null) {
    if (null) bytes_.resize(start_);
    fields_.push_back(Field{start_, static_cast<uint32_t>(bytes_.size() - start_), null});
    start_ = static_cast<uint32_t>(bytes_.size());
  }
  // The text of the field being built so far.
  std::string_view Pending() const { return std::string_view(bytes_).substr(start_); }
  // The fields since the last EndRow form a row.
  void EndRow() { row_ends_.push_back(static_cast<uint32_t>(fields_.size())); }
  // The fields since the last EndRow are dropped (a header line).
  void DropRow() {
    uint32_t begin = row_ends_.empty() ? 0 : row_ends_.back();
    start_ = begin < fields_.size() ? fields_[begin].offset : start_;
    bytes_.resize(start_);
    fields_.resize(begin);
  }
  // Fields of the row being built.
  size_t PendingFields() const {
    return fields_.size() - (row_ends_.empty() ? 0 : row_ends_.back());
  }

  size_t rows() const { return row_ends_.size(); }
  size_t row_begin(size_t r) const { return r == 0 ? 0 : row_ends_[r - 1]; }
  size_t row_end(size_t r) const { return row_ends_[r]; }
  bool null(size_t f) const { return fields_[f].null; }
  std::string_view text(size_t f) const {
    return std::string_view(bytes_).substr(fields_[f].offset, fields_[f].size);
  }
  void Reserve(size_t bytes, size_t fields) {
    bytes_.reserve(bytes);
    fields_.reserve(fields);
  }

 private:
  struct Field {
    uint32_t offset;
    uint32_t size;
    bool null;
  };
  std::string bytes_;
  std::vector<Field> fields_;
  std::vector<uint32_t> row_ends_;
  uint32_t start_ = 0;  // offset of the field being built
};

// A piece of a COPY's input and the line of its first row.
struct CopyPiece {
  CopyRows rows;
  uint64_t first_line = 1;
};

}  // namespace wattdb::master
