// enum_names.h — an enum-valued recipe key's spellings: EnumNames<E> names the one table of
// (value, YAML name) pairs for E, and everything else (parsing, --set, the "expected a|b|c"
// errors, the resolved YAML, `farthing plan`'s text) reads its names through it. The tables of
// enums that live in lower layers stay there (optim_config.h, lr_schedule.h, fp8_policy.h);
// run_config.h points EnumNames at them and holds the recipe's own.
//
// EnumRef is an enum field with its table, type-erased: the recipe schema's FieldRef for enum
// keys (recipe_keys.h), so recipe_keys.cpp keeps one line per key whatever the key's type.
// Relies on: core/error.h. Tested by: tests/train/recipe/ (every enum key round-trips; unknown names list the table).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "framework/core/error.h"

namespace farthing::recipe {

// Specialised once per enum a recipe holds, with `static constexpr const auto& table`: a
// std::array<std::pair<E, std::string_view>, N> in the order the errors list the names.
template <class E>
struct EnumNames;

template <class E>
concept NamedEnum = std::is_enum_v<E> && requires { EnumNames<E>::table; };

// The YAML name of `value` ("" for a value outside the table: only a config built in code can
// hold one).
template <NamedEnum E>
std::string_view enum_name(E value) {
  for (const auto& [v, name] : EnumNames<E>::table) {
    if (v == value) return name;
  }
  return "";
}

// The value named `name`; nullopt when no entry has that name.
template <NamedEnum E>
std::optional<E> enum_named(std::string_view name) {
  for (const auto& [v, n] : EnumNames<E>::table) {
    if (n == name) return v;
  }
  return std::nullopt;
}

// The value named `name`, for names written in code (the benchmarks' tables of settings);
// throws naming the accepted names otherwise.
template <NamedEnum E>
E enum_of(std::string_view name) {
  if (const std::optional<E> value = enum_named<E>(name)) return *value;
  std::string names;
  for (const auto& entry : EnumNames<E>::table) {
    if (!names.empty()) names += '|';
    names += entry.second;
  }
  FARTHING_FAIL("'", name, "' is not one of ", names);
}

// An enum field and its names, whatever the enum.
class EnumRef {
 public:
  template <NamedEnum E>
  explicit EnumRef(E* field) : field_(field), ops_(&kOps<E>) {}

  // Every name, in the table's order.
  std::vector<std::string> names() const { return ops_->names(); }
  // The field's name ("" outside the table).
  std::string_view name() const { return ops_->name(field_); }
  // Sets the field to the value named `name`; false (field untouched) when there is none.
  bool set(std::string_view name) const { return ops_->set(field_, name); }

 private:
  struct Ops {
    std::vector<std::string> (*names)();
    std::string_view (*name)(const void* field);
    bool (*set)(void* field, std::string_view name);
  };
  template <class E>
  static constexpr Ops kOps = {
      [] {
        std::vector<std::string> out;
        for (const auto& entry : EnumNames<E>::table) out.emplace_back(entry.second);
        return out;
      },
      [](const void* field) { return enum_name(*static_cast<const E*>(field)); },
      [](void* field, std::string_view name) {
        const std::optional<E> value = enum_named<E>(name);
        if (value) *static_cast<E*>(field) = *value;
        return value.has_value();
      },
  };

  void* field_;
  const Ops* ops_;
};

}  // namespace farthing::recipe
