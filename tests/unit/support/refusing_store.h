// RefusingStore: a Store over another that refuses reads or writes with a
// status the test chooses (a full disk, a leadership in doubt), and goes
// back to passing them through when told.
#ifndef VIPU_TESTS_UNIT_SUPPORT_REFUSING_STORE_H_
#define VIPU_TESTS_UNIT_SUPPORT_REFUSING_STORE_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "storage/store.h"

namespace vipu::test {

// Owns the store it passes through to. Whether a call is refused is decided
// when it is made. A refused write still goes through the inner store's
// writer, so its `done` runs where a real refusal's would (the writer thread)
// and nothing of it is written. Thread-safe.
class RefusingStore final : public storage::Store {
 public:
  explicit RefusingStore(std::unique_ptr<storage::Store> inner) : inner_(std::move(inner)) {}

  // Every Read / Write / WriteAsync from now on fails with `status`.
  void RefuseReads(absl::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    read_refusal_ = std::move(status);
  }
  void RefuseWrites(absl::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    write_refusal_ = std::move(status);
  }
  // Passes everything through again.
  void Accept() {
    std::lock_guard<std::mutex> lock(mu_);
    read_refusal_ = absl::OkStatus();
    write_refusal_ = absl::OkStatus();
  }

  absl::Status Read(const std::function<absl::Status(storage::ReadTxn&)>& fn) override {
    if (absl::Status refusal = ReadRefusal(); !refusal.ok()) return refusal;
    return inner_->Read(fn);
  }
  absl::Status Write(const std::function<absl::Status(storage::WriteTxn&)>& fn) override {
    if (absl::Status refusal = WriteRefusal(); !refusal.ok()) {
      return inner_->Write([refusal](storage::WriteTxn&) { return refusal; });
    }
    return inner_->Write(fn);
  }
  void WriteAsync(std::function<absl::Status(storage::WriteTxn&)> fn,
                  std::function<void(absl::Status)> done) override {
    if (absl::Status refusal = WriteRefusal(); !refusal.ok()) {
      fn = [refusal](storage::WriteTxn&) { return refusal; };
    }
    inner_->WriteAsync(std::move(fn), std::move(done));
  }
  absl::Status Backup(const std::string& path) override { return inner_->Backup(path); }
  uint64_t commits() const override { return inner_->commits(); }
  uint64_t writes() const override { return inner_->writes(); }
  uint64_t pending_writes() const override { return inner_->pending_writes(); }
  void SetCommitObserver(std::function<void(double seconds, size_t writes)> observer) override {
    inner_->SetCommitObserver(std::move(observer));
  }

 private:
  absl::Status ReadRefusal() const {
    std::lock_guard<std::mutex> lock(mu_);
    return read_refusal_;
  }
  absl::Status WriteRefusal() const {
    std::lock_guard<std::mutex> lock(mu_);
    return write_refusal_;
  }

  const std::unique_ptr<storage::Store> inner_;
  mutable std::mutex mu_;
  absl::Status read_refusal_;
  absl::Status write_refusal_;
};

}  // namespace vipu::test

#endif  // VIPU_TESTS_UNIT_SUPPORT_REFUSING_STORE_H_
