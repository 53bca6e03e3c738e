"""A plain, slow port of FunASR's text post-processing, kept line for line beside the original so
a reviewer can compare them: funasr/utils/postprocess_utils.py of modelscope/FunASR (MIT),
commit 8cd0d4aab71939e56539ff6c1027b37ad4324433 — isChinese, isAllChinese, isAllAlpha,
abbr_dispose and sentence_postprocess, both paths: the text path (time_stamp=None) and the
timestamp path (time_stamp = one [begin, end] per token, what FunASR returns as the words'
merged times). Every line is kept, quirks included: string ORDER comparisons in isChinese,
`num += 2` inside a for loop, list-membership tests, the pop of whatever element is last, the
time bookkeeping that gives "other" tokens no entry and a pending piece's times to the CJK
token after it.

It is the oracle for oasr_tok's funasr_char kind in mode="parity": the kind's decode must equal
`sentence_postprocess([tokens[i] for i in ids if i not in special_ids])[0]`, and its word
timings are compared with the timestamp path's (real_word_lists, ts_lists).
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


def abbr_dispose(words, time_stamp=None):
    words_size = len(words)
    word_lists = []
    abbr_begin = []
    abbr_end = []
    last_num = -1
    ts_lists = []
    ts_nums = []
    ts_index = 0
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

    # Time entries are counted over the non-space elements: element num's entry is
    # time_stamp[ts_nums[num]] (a space shares the index of the element after it).
    for num in range(words_size):
        if words[num] == " ":
            ts_nums.append(ts_index)
        else:
            ts_nums.append(ts_index)
            ts_index += 1
    last_num = -1
    for num in range(words_size):
        if num <= last_num:
            continue

        if num in abbr_begin:
            if time_stamp is not None:
                begin = time_stamp[ts_nums[num]][0]
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
            if time_stamp is not None and ts_nums[num] < len(time_stamp):
                end = time_stamp[ts_nums[num]][1]
                ts_lists.append([begin, end])
        else:
            word_lists.append(words[num])
            if time_stamp is not None and ts_nums[num] < len(time_stamp) and words[num] != " ":
                begin = time_stamp[ts_nums[num]][0]
                end = time_stamp[ts_nums[num]][1]
                ts_lists.append([begin, end])
                begin = end

    if time_stamp is not None:
        return word_lists, ts_lists
    else:
        return word_lists


def sentence_postprocess(words, time_stamp=None):
    """Returns (sentence, real_word_lists) like FunASR's text path, or with `time_stamp` (one
    [begin, end] per word of `words` after the wash) (sentence, ts_lists, real_word_lists) like
    its timestamp path, whose sentence joins the words with spaces."""
    middle_lists = []
    word_lists = []
    word_item = ""
    ts_lists = []

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
        for ch in middle_lists:
            word_lists.append(ch.replace(" ", ""))
        if time_stamp is not None:
            ts_lists = time_stamp

    # all alphabetic
    elif is_all_alpha(middle_lists):
        ts_flag = True
        for i, ch in enumerate(middle_lists):
            if ts_flag and time_stamp is not None:
                begin = time_stamp[i][0]
                end = time_stamp[i][1]
            word = ""
            if "@@" in ch:
                word = ch.replace("@@", "")
                word_item += word
                if time_stamp is not None:
                    ts_flag = False
                    end = time_stamp[i][1]
            else:
                word_item += ch
                word_lists.append(word_item)
                word_lists.append(" ")
                word_item = ""
                if time_stamp is not None:
                    ts_flag = True
                    end = time_stamp[i][1]
                    ts_lists.append([begin, end])
                    begin = end

    # mixed
    else:
        alpha_blank = False
        ts_flag = True
        begin = -1
        end = -1
        for i, ch in enumerate(middle_lists):
            if ts_flag and time_stamp is not None:
                begin = time_stamp[i][0]
                end = time_stamp[i][1]
            word = ""
            if is_all_chinese(ch):
                if alpha_blank is True:
                    word_lists.pop()
                word_lists.append(ch)
                alpha_blank = False
                if time_stamp is not None:
                    ts_flag = True
                    ts_lists.append([begin, end])
                    begin = end
            elif "@@" in ch:
                word = ch.replace("@@", "")
                word_item += word
                alpha_blank = False
                if time_stamp is not None:
                    ts_flag = False
                    end = time_stamp[i][1]
            elif is_all_alpha(ch):
                word_item += ch
                word_lists.append(word_item)
                word_lists.append(" ")
                word_item = ""
                alpha_blank = True
                if time_stamp is not None:
                    ts_flag = True
                    end = time_stamp[i][1]
                    ts_lists.append([begin, end])
                    begin = end
            else:
                word_lists.append(ch)

    if time_stamp is not None:
        word_lists, ts_lists = abbr_dispose(word_lists, ts_lists)
        real_word_lists = []
        for ch in word_lists:
            if ch != " ":
                real_word_lists.append(ch)
        sentence = " ".join(real_word_lists).strip()
        return sentence, ts_lists, real_word_lists
    else:
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
