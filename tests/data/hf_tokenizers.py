"""Reference tokenizers for tests/data/test_tokenizer_hf.cpp, made and run by Hugging Face `tokenizers`.

    python hf_tokenizers.py DOCS.jsonl OUT_DIR [GPT2_DIR]

DOCS.jsonl holds one JSON string per line, the documents. Trains byte-level BPE tokenizers on them and writes
to OUT_DIR, for each NAME below, NAME.json (the tokenizer.json that gradsweep loads), and in ids.json the ids
of every document as tokenizers encodes them (add_special_tokens=False) and those ids decoded again
(skip_special_tokens=False): {"ids": {NAME: [[ids], ...]}, "decoded": {NAME: [text, ...]}}.

  bytelevel         GPT-2's layout: pre_tokenizer ByteLevel(add_prefix_space=False, use_regex=True), the
                    special token <|endoftext|> first, merges written as "a b" strings (the form before 0.20)
  bytelevel_prefix  the same model with add_prefix_space=True and merges as [a, b] pairs, plus an added
                    special token with lstrip (<mask>) and a normalized, non-special added token (Zork)
  llama3            Llama-3's layout: Sequence[Split(Regex(its pattern), isolated), ByteLevel(use_regex=False)],
                    ignore_merges, special tokens added after the vocabulary (<|begin_of_text|>, ...)
  gpt2              with GPT2_DIR (GPT-2's published encoder.json and vocab.bpe): GPT-2's own tokenizer as the
                    published tokenizer.json lays it out, built by tokenizers from those files: 50,000 merges
                    written as "a b" strings, <|endoftext|> the last id (50256) as an added special token,
                    ByteLevel pre-tokenizer, post-processor and decoder
  wordpiece.json    a WordPiece tokenizer (no ids): gradsweep must refuse it

Every tokenizer.json is reloaded by tokenizers before encoding, so the ids are those of the file gradsweep reads.
"""
import json
import sys
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)
VOCAB = 2000


def byte_level_trainer(special_tokens):
    return trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )


def save(tokenizer_json: dict, path: Path) -> Tokenizer:
    path.write_text(json.dumps(tokenizer_json, ensure_ascii=False), encoding="utf-8")
    return Tokenizer.from_file(str(path))


def bytelevel(docs, out: Path):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(docs, trainer=byte_level_trainer(["<|endoftext|>"]))
    trained = json.loads(tok.to_str())

    legacy = json.loads(json.dumps(trained))
    legacy["model"]["merges"] = [m if isinstance(m, str) else " ".join(m) for m in legacy["model"]["merges"]]
    plain = save(legacy, out / "bytelevel.json")

    prefixed_json = json.loads(json.dumps(trained))
    prefixed_json["pre_tokenizer"]["add_prefix_space"] = True
    prefixed_json["model"]["merges"] = [m.split(" ") if isinstance(m, str) else m for m in trained["model"]["merges"]]
    prefixed = Tokenizer.from_str(json.dumps(prefixed_json))
    prefixed.add_special_tokens([AddedToken("<mask>", lstrip=True, normalized=False, special=True)])
    prefixed.add_tokens([AddedToken("Zork", normalized=True, special=False)])
    prefixed = save(json.loads(prefixed.to_str()), out / "bytelevel_prefix.json")
    return {"bytelevel": plain, "bytelevel_prefix": prefixed}


def llama3(docs, out: Path):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(docs, trainer=byte_level_trainer([]))
    # As Llama-3: special tokens after the vocabulary, and ignore_merges (set in the JSON: whether the trainer
    # keeps the flag varies between versions).
    tok.add_special_tokens(["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"])
    data = json.loads(tok.to_str())
    data["model"]["ignore_merges"] = True
    return {"llama3": save(data, out / "llama3.json")}


def gpt2(gpt2_dir: Path, out: Path):
    vocab = json.loads((gpt2_dir / "encoder.json").read_text(encoding="utf-8"))
    lines = (gpt2_dir / "vocab.bpe").read_text(encoding="utf-8").split("\n")
    merges = [tuple(line.split(" ")) for line in lines[1:] if line]  # after "#version: 0.2"
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken("<|endoftext|>", normalized=True, special=True)])
    data = json.loads(tok.to_str())
    data["model"]["merges"] = [m if isinstance(m, str) else " ".join(m) for m in data["model"]["merges"]]
    assert data["added_tokens"][0]["id"] == 50256 and len(data["model"]["merges"]) == 50000
    return {"gpt2": save(data, out / "gpt2.json")}


def wordpiece(docs, out: Path):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        docs[:200], trainer=trainers.WordPieceTrainer(vocab_size=300, special_tokens=["[UNK]"], show_progress=False)
    )
    tok.save(str(out / "wordpiece.json"))


def main():
    docs_path, out = Path(sys.argv[1]), Path(sys.argv[2])
    with docs_path.open(encoding="utf-8") as f:
        docs = [json.loads(line) for line in f if line.strip()]
    tokenizers = {**bytelevel(docs, out), **llama3(docs, out)}
    if len(sys.argv) > 3:
        tokenizers.update(gpt2(Path(sys.argv[3]), out))
    wordpiece(docs, out)
    ids = {name: [e.ids for e in tok.encode_batch(docs, add_special_tokens=False)] for name, tok in tokenizers.items()}
    decoded = {name: tok.decode_batch(ids[name], skip_special_tokens=False) for name, tok in tokenizers.items()}
    (out / "ids.json").write_text(json.dumps({"ids": ids, "decoded": decoded}), encoding="utf-8")
    print(f"hf_tokenizers: {len(docs)} documents, tokenizers {sorted(ids)} -> {out}")


if __name__ == "__main__":
    main()
