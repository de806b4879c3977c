// gemm_plan_book_text.h — a GEMM plan book (kernels/numerics/gemm_plan_book.h) as text: what a
// checkpoint stores and what rank 0 broadcasts. Line-based, so `h5dump` shows it readably:
//
//   farthing gemm plan book 1
//   device NVIDIA H200
//   cublaslt 130100
//   plan <128 hex digits: the algorithm's 8 words> <the plan's key, to the end of the line>
//
// Plans are written in key order, so one book has one text. Reading refuses anything else with
// one line naming `where`, the line number and what was expected.
// Relies on: kernels/numerics/gemm_plan_book.h, framework/core/error.h.
// Tested by: tests/backend/test_gemm_plan_book.cpp.
#pragma once

#include <string>
#include <string_view>

#include "kernels/numerics/gemm_plan_book.h"

namespace farthing {

std::string gemm_plan_book_text(const kernels::GemmPlanBook& book);
// where: what the text came from ("checkpoint X's gemm_plan_book"), for the error.
kernels::GemmPlanBook parse_gemm_plan_book(std::string_view text, const std::string& where);

}  // namespace farthing
