"""A plain, slow port of FunASR's text post-processing, kept line for line beside the original so
a reviewer can compare them: funasr/utils/postprocess_utils.py of modelscope/FunASR (MIT),
commit 8cd0d4aab71939e56539ff6c1027b37ad4324433 — isChinese, isAllChinese, isAllAlpha,
abbr_dispose and sentence_postprocess, text path only (time_stamp=None; the timestamp
bookkeeping is left out, every text-affecting line is kept, quirks included: string ORDER
comparisons in isChinese, `num += 2` inside a for loop, list-membership tests, the pop of
whatever element is last).

It is the oracle for oasr_tok's funasr_char kind in mode="parity": the kind's decode must equal
`sentence_postprocess([tokens[i] for i in ids if i not in special_ids])[0]`.
"""
from __future__ import annotations


def is_chinese(ch):
    # Compares STRINGS: for a multi-character string this is lexicographic order.
    if "\u4e00" <= ch <= "\u9fff" or "\u0030" <= ch <= "\u0039" or ch == "@":
        return True
    return False


def is_all_chinese(word):
    # `word` is either a list of tokens or one token (then it iterates its characters).
    word_lists = []
    for i in word:
        cur = i.replace(" ", "")
        cur = cur.replace("</s>", "")
        cur = cur.replace("<s>", "")
        cur = cur.replace("<unk>", "")
        cur = cur.replace("<OOV>", "")
        word_lists.append(cur)

    if len(word_lists) == 0:
        return False

    for ch in word_lists:
        if is_chinese(ch) is False:
            return False
    return True


def is_all_alpha(word):
    word_lists = []
    for i in word:
        cur = i.replace(" ", "")
        cur = cur.replace("</s>", "")
        cur = cur.replace("<s>", "")
        cur = cur.replace("<unk>", "")
        cur = cur.replace("<OOV>", "")
        word_lists.append(cur)

    if len(word_lists) == 0:
        return False

    for ch in word_lists:
        if ch.isalpha() is False and ch != "'":
            return False
        elif ch.isalpha() is True and is_chinese(ch) is True:
            return False

    return True


def abbr_dispose(words):
    words_size = len(words)
    word_lists = []
    abbr_begin = []
    abbr_end = []
    last_num = -1
    for num in range(words_size):
        if num <= last_num:
            continue

        if len(words[num]) == 1 and words[num].encode("utf-8").isalpha():
            if (
                num + 1 < words_size
                and words[num + 1] == " "
                and num + 2 < words_size
                and len(words[num + 2]) == 1
                and words[num + 2].encode("utf-8").isalpha()
            ):
                # the beginning of an abbreviation
                abbr_begin.append(num)
                num += 2  # (rebinds the loop variable only until the next iteration)
                abbr_end.append(num)
                # look for its end
                while True:
                    num += 1
                    if num < words_size and words[num] == " ":
                        num += 1
                        if num < words_size and len(words[num]) == 1 and words[num].encode("utf-8").isalpha():
                            abbr_end.pop()
                            abbr_end.append(num)
                            last_num = num
                        else:
                            break
                    else:
                        break

    last_num = -1
    for num in range(words_size):
        if num <= last_num:
            continue

        if num in abbr_begin:
            abbr_word = words[num].upper()
            num += 1
            while num < words_size:
                if num in abbr_end:
                    abbr_word += words[num].upper()
                    last_num = num
                    break
                else:
                    if words[num].encode("utf-8").isalpha():
                        abbr_word += words[num].upper()
                num += 1
            word_lists.append(abbr_word)
        else:
            word_lists.append(words[num])

    return word_lists


def sentence_postprocess(words):
    """Returns (sentence, real_word_lists) like FunASR's text path."""
    middle_lists = []
    word_lists = []
    word_item = ""

    # wash the word list
    for i in words:
        word = ""
        if isinstance(i, str):
            word = i
        else:
            word = i.decode("utf-8")

        if word in ["<s>", "</s>", "<unk>", "<OOV>"]:
            continue
        else:
            middle_lists.append(word)

    # all Chinese characters
    if is_all_chinese(middle_lists):
        for i, ch in enumerate(middle_lists):
            word_lists.append(ch.replace(" ", ""))

    # all alphabetic
    elif is_all_alpha(middle_lists):
        for i, ch in enumerate(middle_lists):
            word = ""
            if "@@" in ch:
                word = ch.replace("@@", "")
                word_item += word
            else:
                word_item += ch
                word_lists.append(word_item)
                word_lists.append(" ")
                word_item = ""

    # mixed
    else:
        alpha_blank = False
        for i, ch in enumerate(middle_lists):
            word = ""
            if is_all_chinese(ch):
                if alpha_blank is True:
                    word_lists.pop()
                word_lists.append(ch)
                alpha_blank = False
            elif "@@" in ch:
                word = ch.replace("@@", "")
                word_item += word
                alpha_blank = False
            elif is_all_alpha(ch):
                word_item += ch
                word_lists.append(word_item)
                word_lists.append(" ")
                word_item = ""
                alpha_blank = True
            else:
                word_lists.append(ch)

    word_lists = abbr_dispose(word_lists)
    real_word_lists = []
    for ch in word_lists:
        if ch != " ":
            real_word_lists.append(ch)
    sentence = "".join(word_lists).strip()
    return sentence, real_word_lists


def reference_decode(tokens, special_ids, ids):
    """What FunASR prints for `ids`: special ids stripped, then sentence_postprocess."""
    return sentence_postprocess([tokens[i] for i in ids if i not in special_ids])[0]
