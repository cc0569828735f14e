// The name-value pairs an agent reports (its machine details, the
// attributes of each IPU), in order, kept compactly: the list of names is
// shared by every report that has the same names in the same order (every
// machine of a pod reports the same 12 details and 20 attributes per IPU),
// and the values are packed into one allocation. At 16,384 machines a vector
// of string pairs per IPU cost about 10 KB per machine (the strings, their
// vectors grown by doubling); this costs a few hundred bytes.
//
// Immutable once built; copies share the names. Thread-safe as a value: the
// pool behind the shared names locks.
#ifndef VIPU_SERVER_FLEET_ATTRIBUTES_H_
#define VIPU_SERVER_FLEET_ATTRIBUTES_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vipu::server {

class Attributes {
 public:
  // A pair as the iteration yields it: views into the Attributes, valid
  // while it lives.
  using value_type = std::pair<std::string_view, std::string_view>;

  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Attributes::value_type;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = value_type;

    const_iterator(const Attributes* owner, size_t index) : owner_(owner), index_(index) {}
    value_type operator*() const { return (*owner_)[index_]; }
    const_iterator& operator++() {
      ++index_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator before = *this;
      ++index_;
      return before;
    }
    bool operator==(const const_iterator& other) const { return index_ == other.index_; }
    bool operator!=(const const_iterator& other) const { return index_ != other.index_; }

   private:
    const Attributes* owner_;
    size_t index_;
  };

  Attributes() = default;
  Attributes(std::initializer_list<std::pair<std::string, std::string>> pairs);
  explicit Attributes(const std::vector<std::pair<std::string, std::string>>& pairs);

  size_t size() const { return names_ == nullptr ? 0 : names_->size(); }
  bool empty() const { return size() == 0; }
  value_type operator[](size_t i) const;
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }

  bool operator==(const Attributes& other) const;
  bool operator!=(const Attributes& other) const { return !(*this == other); }

  // Heap bytes this one holds of its own (the shared names not counted).
  size_t OwnBytes() const { return values_.capacity(); }

 private:
  template <typename Pairs>
  void Build(const Pairs& pairs);

  // Shared by every Attributes with the same names in the same order.
  std::shared_ptr<const std::vector<std::string>> names_;
  // size() end offsets (uint32, native order), then the values back to back.
  std::string values_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_FLEET_ATTRIBUTES_H_
