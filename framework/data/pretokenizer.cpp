// pretokenizer.cpp — see pretokenizer.h.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "framework/data/pretokenizer.h"

#include <pcre2.h>

#include <mutex>

#include "framework/core/error.h"
#include "framework/data/utf8.h"

namespace farthing::data {

struct RegexSplitter::Impl {
  std::vector<pcre2_code*> codes;
  // Match data per regex; split() is const but reuses them under a lock.
  std::vector<pcre2_match_data*> match_data;
  mutable std::mutex mutex;
  ~Impl() {
    for (auto* m : match_data) pcre2_match_data_free(m);
    for (auto* c : codes) pcre2_code_free(c);
  }
  void split_one(size_t index, std::string_view text, std::vector<std::string_view>& out) const;
};

RegexSplitter::RegexSplitter() : impl_(std::make_unique<Impl>()) {}
RegexSplitter::RegexSplitter(const std::vector<std::string>& patterns)
    : impl_(std::make_unique<Impl>()) {
  for (const std::string& pattern : patterns) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    pcre2_code* code = pcre2_compile(
        reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
        PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error_code, &error_offset, nullptr);
    if (!code) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error_code, message, sizeof(message));
      FARTHING_FAIL("pre-tokenizer regex does not compile at offset ", error_offset, ": ",
                    reinterpret_cast<const char*>(message), " (pattern: ", pattern, ")");
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if unavailable
    impl_->codes.push_back(code);
    impl_->match_data.push_back(pcre2_match_data_create_from_pattern(code, nullptr));
  }
}
RegexSplitter::~RegexSplitter() = default;
RegexSplitter::RegexSplitter(RegexSplitter&&) noexcept = default;
RegexSplitter& RegexSplitter::operator=(RegexSplitter&&) noexcept = default;

bool RegexSplitter::empty() const { return impl_->codes.empty(); }

void RegexSplitter::Impl::split_one(size_t index, std::string_view text,
                                    std::vector<std::string_view>& out) const {
  if (index == codes.size()) {
    out.push_back(text);
    return;
  }
  auto emit = [&](size_t begin, size_t end) {
    if (end > begin) split_one(index + 1, text.substr(begin, end - begin), out);
  };
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0, gap_begin = 0;
  while (pos <= text.size()) {
    const int rc = pcre2_match(codes[index], subject, text.size(), pos, 0, match_data[index], nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    FARTHING_CHECK(rc >= 0, "pre-tokenizer regex match failed with PCRE2 code ", rc);
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match_data[index]);
    const size_t begin = ovector[0], end = ovector[1];
    if (end == begin) {  // an empty match: step over one character
      pos = begin + (begin < text.size() ? utf8_char_len(text, begin) : 1);
      continue;
    }
    emit(gap_begin, begin);
    emit(begin, end);
    gap_begin = pos = end;
  }
  emit(gap_begin, text.size());
}

void RegexSplitter::split(std::string_view text, std::vector<std::string_view>& out) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->split_one(0, text, out);
}

}  // namespace farthing::data
