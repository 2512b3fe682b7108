#pragma once
// A task's named scores ("val_loss", "val_accuracy", "test_accuracy", ...) and stage times:
// what the engine records, selects by and reports without knowing which task produced them.

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace halo::runtime {

/// Named values in the order they were first set. A task sets the names it has (a NaN value is
/// a score it has but could not compute: an empty split); a name it does not set is not its.
class Metrics {
 public:
  using Entry = std::pair<std::string, double>;
  Metrics() = default;
  Metrics(std::initializer_list<Entry> entries) {
    for (const Entry& e : entries) set(e.first, e.second);
  }
  /// Sets `name` (replacing its value, or appending it).
  void set(const std::string& name, double value) {
    for (Entry& e : m_entries)
      if (e.first == name) {
        e.second = value;
        return;
      }
    m_entries.emplace_back(name, value);
  }
  /// Sets every entry of `other`.
  void merge(const Metrics& other) {
    for (const Entry& e : other.m_entries) set(e.first, e.second);
  }
  bool contains(const std::string& name) const { return find(name) != nullptr; }
  /// halo::LogicError naming `name` and the names there are when it is not set.
  double at(const std::string& name) const;
  const std::vector<Entry>& entries() const { return m_entries; }
  bool empty() const { return m_entries.empty(); }
  auto begin() const { return m_entries.begin(); }
  auto end() const { return m_entries.end(); }
  friend bool operator==(const Metrics&, const Metrics&) = default;

 private:
  const double* find(const std::string& name) const {
    for (const Entry& e : m_entries)
      if (e.first == name) return &e.second;
    return nullptr;
  }
  std::vector<Entry> m_entries;
};

}  // namespace halo::runtime
