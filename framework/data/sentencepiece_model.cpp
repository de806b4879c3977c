// sentencepiece_model.cpp — see sentencepiece_model.h.
#include "framework/data/sentencepiece_model.h"

#include <cstring>

#include "framework/ckpt/mapped_file.h"

namespace farthing::data {

namespace {

// A minimal protobuf reader over [p, end).
struct Proto {
  const uint8_t* p;
  const uint8_t* end;
  const std::string* file;

  bool done() const { return p >= end; }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      FARTHING_CHECK(p < end, *file, " is truncated or not a SentencePiece model (varint runs past the end)");
      const uint8_t b = *p++;
      v |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    FARTHING_FAIL(*file, " is not a SentencePiece model (a varint is too long)");
  }
  Proto sub() {
    const uint64_t n = varint();
    FARTHING_CHECK(n <= uint64_t(end - p), *file, " is truncated: a field of ", n, " bytes runs past the end");
    Proto s{p, p + n, file};
    p += n;
    return s;
  }
  uint32_t fixed32() {
    FARTHING_CHECK(end - p >= 4, *file, " is truncated");
    uint32_t v;
    std::memcpy(&v, p, 4);
    p += 4;
    return v;
  }
  void skip(uint32_t wire) {
    switch (wire) {
      case 0: varint(); return;
      case 1: FARTHING_CHECK(end - p >= 8, *file, " is truncated"); p += 8; return;
      case 2: sub(); return;
      case 5: fixed32(); return;
    }
    FARTHING_FAIL(*file, " is not a SentencePiece model (protobuf wire type ", wire, ")");
  }
};

}  // namespace

TokenizerSpec load_sentencepiece_model_spec(const std::filesystem::path& path) {
  ckpt::MappedFile file(path);
  const std::string& name = file.name();
  TokenizerSpec spec;
  spec.source = name;
  spec.kind = TokenizerKind::kSentencePiece;
  spec.add_dummy_prefix = true;
  spec.add_bos = true;
  std::vector<int> types;
  int64_t model_type = 1;
  Proto root{file.data(), file.data() + file.size(), &name};
  while (!root.done()) {
    const uint64_t key = root.varint();
    const uint32_t field = uint32_t(key >> 3), wire = uint32_t(key & 7);
    if (field == 1 && wire == 2) {
      Proto piece = root.sub();
      std::string text;
      float score = 0.0f;
      int type = 1;
      while (!piece.done()) {
        const uint64_t k = piece.varint();
        if ((k >> 3) == 1 && (k & 7) == 2) {
          Proto s = piece.sub();
          text.assign(reinterpret_cast<const char*>(s.p), size_t(s.end - s.p));
        } else if ((k >> 3) == 2 && (k & 7) == 5) {
          const uint32_t bits = piece.fixed32();
          std::memcpy(&score, &bits, 4);
        } else if ((k >> 3) == 3 && (k & 7) == 0) {
          type = int(piece.varint());
        } else {
          piece.skip(uint32_t(k & 7));
        }
      }
      spec.pieces.push_back(std::move(text));
      spec.scores.push_back(score);
      types.push_back(type);
    } else if (field == 2 && wire == 2) {
      Proto trainer = root.sub();
      while (!trainer.done()) {
        const uint64_t k = trainer.varint();
        if ((k >> 3) == 3 && (k & 7) == 0) model_type = int64_t(trainer.varint());
        else if ((k >> 3) == 35 && (k & 7) == 0) spec.byte_fallback = trainer.varint() != 0;
        else trainer.skip(uint32_t(k & 7));
      }
    } else if (field == 3 && wire == 2) {
      Proto normalizer = root.sub();
      while (!normalizer.done()) {
        const uint64_t k = normalizer.varint();
        if ((k >> 3) == 3 && (k & 7) == 0) spec.add_dummy_prefix = normalizer.varint() != 0;
        else normalizer.skip(uint32_t(k & 7));
      }
    } else {
      root.skip(wire);
    }
  }
  FARTHING_CHECK(!spec.pieces.empty(), name, " is not a SentencePiece model: it holds no pieces");
  FARTHING_CHECK(model_type == 2, name, " is a SentencePiece model of type ", model_type,
                 "; only BPE (type 2) is supported");
  spec.mergeable.assign(spec.pieces.size(), 0);
  for (size_t id = 0; id < types.size(); ++id) {
    spec.mergeable[id] = types[id] == 1;
    if (types[id] == 2 && spec.unk_id < 0) spec.unk_id = int32_t(id);
    if (types[id] == 4) spec.added_tokens.push_back({spec.pieces[id], int32_t(id), false, false, false});
    if (types[id] == 3 && !spec.pieces[id].empty()) {
      spec.added_tokens.push_back({spec.pieces[id], int32_t(id), true, false, false});
      if (spec.pieces[id] == "<s>") spec.bos_id = int32_t(id);
      if (spec.pieces[id] == "</s>") spec.eos_id = int32_t(id);
    }
  }
  return spec;
}

}  // namespace farthing::data
