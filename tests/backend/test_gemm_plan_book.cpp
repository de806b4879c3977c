// test_gemm_plan_book.cpp — a GEMM plan book's text (framework/backend/gemm_plan_book_text.h):
// written in one canonical form, read back to the same book, and every malformed line refused
// with one line naming where the text came from, the line and what was expected.
#include <gtest/gtest.h>

#include <string>

#include "framework/backend/gemm_plan_book_text.h"
#include "framework/core/error.h"

namespace farthing {
namespace {

kernels::GemmPlanBook two_plans() {
  kernels::GemmPlanBook book;
  book.device = "NVIDIA H200";
  book.library_version = 130100;
  kernels::GemmAlgorithmBits a{}, b{};
  for (size_t w = 0; w < a.size(); ++w) {
    a[w] = 0x0123456789abcdefull + w;
    b[w] = ~uint64_t(0) - w;
  }
  book.choices["dense bf16 m 4096 n 4096 k 4096 lda 4096 ldb 4096 ldc 4096 trans NT out bf16 align 256"] = a;
  book.choices["dense f32 m 1 n 2 k 3 lda 3 ldb 2 ldc 2 trans NN out f32 align 4"] = b;
  return book;
}

std::string error_of(const std::string& text) {
  try {
    parse_gemm_plan_book(text, "test book");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

const std::string kHex(128, 'a');

TEST(GemmPlanBookText, RoundTripsExactly) {
  const kernels::GemmPlanBook book = two_plans();
  const std::string text = gemm_plan_book_text(book);
  EXPECT_EQ(parse_gemm_plan_book(text, "test book"), book);
  EXPECT_EQ(gemm_plan_book_text(parse_gemm_plan_book(text, "test book")), text);
  const kernels::GemmPlanBook empty;
  EXPECT_EQ(parse_gemm_plan_book(gemm_plan_book_text(empty), "test book"), empty);
}

TEST(GemmPlanBookText, OneCanonicalFormInKeyOrder) {
  const std::string text = gemm_plan_book_text(two_plans());
  const std::string expected =
      "farthing gemm plan book 1\n"
      "device NVIDIA H200\n"
      "cublaslt 130100\n"
      "plan 0123456789abcdef0123456789abcdf00123456789abcdf10123456789abcdf2"
      "0123456789abcdf30123456789abcdf40123456789abcdf50123456789abcdf6 "
      "dense bf16 m 4096 n 4096 k 4096 lda 4096 ldb 4096 ldc 4096 trans NT out bf16 align 256\n"
      "plan fffffffffffffffffffffffffffffffefffffffffffffffdfffffffffffffffc"
      "fffffffffffffffbfffffffffffffffafffffffffffffff9fffffffffffffff8 "
      "dense f32 m 1 n 2 k 3 lda 3 ldb 2 ldc 2 trans NN out f32 align 4\n";
  EXPECT_EQ(text, expected);
}

TEST(GemmPlanBookText, MalformedLinesNameWhereTheLineAndWhatWasExpected) {
  const std::string head = "farthing gemm plan book 1\ndevice X\ncublaslt 7\n";
  struct Case {
    std::string text, expected;
  };
  for (const Case& c : {
           Case{"farthing gemm plan book 2\n", "test book line 1: expected 'farthing gemm plan book 1', found "
                                               "'farthing gemm plan book 2'"},
           Case{"farthing gemm plan book 1\n", "test book line 2: expected 'device <GPU model>', found '(end of text)'"},
           Case{"farthing gemm plan book 1\ndevice X\ncublaslt 13.1\n", "test book line 3: expected 'cublaslt <version"},
           Case{head + "plan " + kHex + "\n", "test book line 4: expected 'plan <128 lowercase hex digits> <key>'"},
           Case{head + "plan " + std::string(127, 'a') + "G key\n", "test book line 4: expected 'plan <128 lowercase"},
           Case{head + "plan " + std::string(128, 'A') + " key\n", "test book line 4: expected 'plan <128 lowercase"},
           Case{head + "plan " + kHex + " key\nplan " + kHex + " key\n", "test book line 5: expected each plan key once"},
           Case{head + "choice " + kHex + " key\n", "test book line 4: expected 'plan <128"},
       }) {
    EXPECT_NE(error_of(c.text).find(c.expected), std::string::npos) << error_of(c.text) << "\nfor:\n" << c.text;
  }
  EXPECT_EQ(error_of(head + "plan " + kHex + " key\n"), "(no error)");
}

TEST(GemmPlanBookText, KeysAndNamesThatWouldBreakTheLinesAreRefused) {
  kernels::GemmPlanBook book;
  book.choices["two\nlines"] = {};
  EXPECT_THROW(gemm_plan_book_text(book), Error);
  kernels::GemmPlanBook device;
  device.device = "a\nb";
  EXPECT_THROW(gemm_plan_book_text(device), Error);
}

}  // namespace
}  // namespace farthing
