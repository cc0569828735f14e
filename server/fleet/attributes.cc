// Attributes: reported name-value pairs with shared names and packed values.
#include "server/fleet/attributes.h"

#include <cstring>
#include <map>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"

namespace vipu::server {
namespace {

using Names = std::vector<std::string>;

// The lists of names in use, each kept once. Entries whose last user went
// are dropped as the pool grows.
class NamePool {
 public:
  std::shared_ptr<const Names> Intern(Names names) ABSL_LOCKS_EXCLUDED(mu_) {
    vipu::MutexLock lock(&mu_);
    auto it = pool_.find(names);
    if (it != pool_.end()) {
      if (std::shared_ptr<const Names> held = it->second.lock()) return held;
    }
    auto shared = std::make_shared<const Names>(names);
    pool_[std::move(names)] = shared;
    if (pool_.size() > 2 * swept_at_ + 16) Sweep();
    return shared;
  }

 private:
  void Sweep() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (auto it = pool_.begin(); it != pool_.end();) {
      it = it->second.expired() ? pool_.erase(it) : std::next(it);
    }
    swept_at_ = pool_.size();
  }

  vipu::Mutex mu_;
  std::map<Names, std::weak_ptr<const Names>> pool_ ABSL_GUARDED_BY(mu_);
  size_t swept_at_ ABSL_GUARDED_BY(mu_) = 0;
};

NamePool& Pool() {
  static NamePool* pool = new NamePool;  // never destroyed: used until exit
  return *pool;
}

}  // namespace

template <typename Pairs>
void Attributes::Build(const Pairs& pairs) {
  if (pairs.size() == 0) return;
  Names names;
  names.reserve(pairs.size());
  size_t bytes = 0;
  for (const auto& [name, value] : pairs) {
    names.push_back(name);
    bytes += value.size();
  }
  names_ = Pool().Intern(std::move(names));
  values_.reserve(pairs.size() * sizeof(uint32_t) + bytes);
  values_.resize(pairs.size() * sizeof(uint32_t));
  uint32_t end = 0;
  size_t i = 0;
  for (const auto& [name, value] : pairs) {
    end += static_cast<uint32_t>(value.size());
    std::memcpy(&values_[i * sizeof(uint32_t)], &end, sizeof end);
    values_.append(value);
    ++i;
  }
}

Attributes::Attributes(std::initializer_list<std::pair<std::string, std::string>> pairs) {
  Build(pairs);
}

Attributes::Attributes(const std::vector<std::pair<std::string, std::string>>& pairs) {
  Build(pairs);
}

Attributes::value_type Attributes::operator[](size_t i) const {
  const size_t n = size();
  uint32_t begin = 0, end = 0;
  if (i > 0) std::memcpy(&begin, &values_[(i - 1) * sizeof(uint32_t)], sizeof begin);
  std::memcpy(&end, &values_[i * sizeof(uint32_t)], sizeof end);
  const char* base = values_.data() + n * sizeof(uint32_t);
  return {(*names_)[i], std::string_view(base + begin, end - begin)};
}

bool Attributes::operator==(const Attributes& other) const {
  if (size() != other.size()) return false;
  if (size() == 0) return true;
  return (names_ == other.names_ || *names_ == *other.names_) && values_ == other.values_;
}

}  // namespace vipu::server
