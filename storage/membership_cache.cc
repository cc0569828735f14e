// MembershipCache: clusters and allocations by id, valid at one epoch of their membership.
#include "storage/membership_cache.h"

#include <utility>

#include "base/absl_view.h"

namespace vipu::storage {

void MembershipCache::BeginChange() {
  vipu::MutexLock lock(&mu_);
  const uint64_t e = epoch_.load(std::memory_order_relaxed);
  if (e % 2 == 0) epoch_.store(e + 1, std::memory_order_release);
}

void MembershipCache::EndChange(const std::set<std::string>& clusters,
                                const std::set<std::string>& allocations) {
  vipu::MutexLock lock(&mu_);
  const uint64_t e = epoch_.load(std::memory_order_relaxed);
  if (e % 2 == 0) return;  // no change in flight
  Retag(&clusters_, e - 1, e + 1, clusters);
  Retag(&allocations_, e - 1, e + 1, allocations);
  epoch_.store(e + 1, std::memory_order_release);
}

template <typename T>
void MembershipCache::Retag(Map<T>* map, uint64_t from, uint64_t to,
                            const std::set<std::string>& touched) {
  for (auto it = map->begin(); it != map->end();) {
    Entry<T>& entry = it->second;
    if (entry.tag == from && touched.count(it->first) == 0) {
      entry.tag = to;
      ++it;
    } else {
      map->erase(it++);
    }
  }
}

template <typename T>
std::shared_ptr<const T> MembershipCache::Find(const Map<T>* map, std::string_view id,
                                               uint64_t read_epoch) const {
  if (read_epoch % 2 != 0) return nullptr;
  vipu::MutexLock lock(&mu_);
  if (epoch_.load(std::memory_order_relaxed) != read_epoch) return nullptr;
  auto it = map->find(AbslView(id));
  if (it == map->end() || it->second.tag != read_epoch) return nullptr;
  return it->second.value;
}

template <typename T>
void MembershipCache::Put(Map<T>* map, uint64_t read_epoch, std::shared_ptr<const T> value) {
  if (read_epoch % 2 != 0 || value == nullptr) return;
  vipu::MutexLock lock(&mu_);
  if (epoch_.load(std::memory_order_relaxed) != read_epoch) return;
  Entry<T>& entry = (*map)[value->id];
  entry.tag = read_epoch;
  entry.value = std::move(value);
}

std::shared_ptr<const fabric::Cluster> MembershipCache::FindCluster(std::string_view id,
                                                                    uint64_t read_epoch) const {
  return Find(&clusters_, id, read_epoch);
}

std::shared_ptr<const fabric::Allocation> MembershipCache::FindAllocation(
    std::string_view id, uint64_t read_epoch) const {
  return Find(&allocations_, id, read_epoch);
}

void MembershipCache::PutCluster(uint64_t read_epoch,
                                 std::shared_ptr<const fabric::Cluster> value) {
  Put(&clusters_, read_epoch, std::move(value));
}

void MembershipCache::PutAllocation(uint64_t read_epoch,
                                    std::shared_ptr<const fabric::Allocation> value) {
  Put(&allocations_, read_epoch, std::move(value));
}

size_t MembershipCache::SizeForTesting() const {
  vipu::MutexLock lock(&mu_);
  return clusters_.size() + allocations_.size();
}

void MembershipChange::Begin() {
  if (begun_ || cache_ == nullptr) return;
  cache_->BeginChange();
  begun_ = true;
}

void MembershipChange::TouchCluster(std::string_view id) {
  Begin();
  clusters_.emplace(id);
}

void MembershipChange::TouchAllocation(std::string_view id) {
  Begin();
  allocations_.emplace(id);
}

void MembershipChange::Finish() {
  if (!begun_) return;
  cache_->EndChange(clusters_, allocations_);
  begun_ = false;
  clusters_.clear();
  allocations_.clear();
}

}  // namespace vipu::storage
