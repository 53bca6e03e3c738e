/* Memory for the Words one grouping call makes (oasr_tok/_words.pyx).
 *
 * A long transcript yields hundreds of thousands of Words. Allocated one by one, they come
 * from fresh allocator arenas that the kernel has to fault in page by page, and are handed
 * back to it when the list dies, so every long call pays for the faults again: that made
 * word timings per token grow with the transcript. Here a call packs its Words into chunks it
 * owns: a bump pointer instead of a per-object allocation, and, past the first few small
 * chunks, each chunk one 2 MiB mapping advised as a transparent huge page (one fault instead
 * of 512 where the kernel allows it; ordinary pages where it does not).
 *
 * A chunk counts the live Words in it (plus one while the grouping still fills it) and is
 * freed with the last of them. It also holds the transcript the Words cut their text from.
 * A Word the caller keeps therefore keeps its chunk (at most 2 MiB) and the transcript, as a
 * NumPy view keeps its base array. Words built by Word(...) are ordinary objects. */
#ifndef OASR_WORDMEM_H
#define OASR_WORDMEM_H
#include <Python.h>
#include <stdint.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define OASR_CHUNK_BYTES ((size_t)2 << 20)
#define OASR_SMALL_CHUNK_BYTES ((size_t)64 << 10) /* larger chunks are mappings */
#define OASR_SLOTS_OFFSET 64 /* the header, rounded up to a cache line */

typedef struct oasr_chunk {
    Py_ssize_t refs;       /* live Words in it, +1 while the grouping still fills it */
    Py_ssize_t used;
    Py_ssize_t capacity;
    Py_ssize_t slot;       /* bytes per Word */
    PyObject *transcript;  /* owned */
    int mapped;            /* 1: an mmap of OASR_CHUNK_BYTES; 0: PyMem_Malloc */
} oasr_chunk;

static Py_ssize_t oasr_chunk_field = -1; /* offset of Word._chunk inside a Word */
static Py_ssize_t oasr_word_refs[3];     /* offsets of the references a Word owns */
static freefunc oasr_python_free = NULL; /* Word's tp_free before it was replaced */

/* Freed mappings kept for the next call, so that a server grouping long transcripts does not
 * have the kernel fault in and zero the same memory again every request (what a general
 * allocator does too). At most OASR_SPARE_CHUNKS * 2 MiB = 32 MiB is kept. */
#define OASR_SPARE_CHUNKS 16
static void *oasr_spare[OASR_SPARE_CHUNKS];
static int oasr_spare_count = 0;

/* A 2 MiB-aligned mapping of OASR_CHUNK_BYTES, or NULL where mapping is unavailable. */
static void *oasr_map_chunk(void)
{
#if defined(__linux__) && defined(MAP_ANONYMOUS)
    size_t span = 2 * OASR_CHUNK_BYTES;
    char *base;
    char *start, *end;
    if (oasr_spare_count) return oasr_spare[--oasr_spare_count];
    base = (char *)mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == (char *)MAP_FAILED) return NULL;
    /* Huge pages need 2 MiB alignment: map twice the size and give back both ends. */
    start = (char *)(((uintptr_t)base + OASR_CHUNK_BYTES - 1) & ~(uintptr_t)(OASR_CHUNK_BYTES - 1));
    end = start + OASR_CHUNK_BYTES;
    if (start > base) munmap(base, (size_t)(start - base));
    if (base + span > end) munmap(end, (size_t)(base + span - end));
#ifdef MADV_HUGEPAGE
    madvise(start, OASR_CHUNK_BYTES, MADV_HUGEPAGE); /* advice only: a refusal is harmless */
#endif
    return start;
#else
    return NULL;
#endif
}

/* A chunk for `capacity` Words of `slot` bytes; NULL with MemoryError set on failure.
 * mapped = 1 asks for a 2 MiB mapping (capacity must fit in it). */
static oasr_chunk *oasr_chunk_new(Py_ssize_t capacity, Py_ssize_t slot, int mapped, PyObject *transcript)
{
    oasr_chunk *c = NULL;
    if (mapped) c = (oasr_chunk *)oasr_map_chunk();
    if (c == NULL) {
        mapped = 0;
        c = (oasr_chunk *)PyMem_Malloc(OASR_SLOTS_OFFSET + (size_t)capacity * (size_t)slot);
        if (c == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
    }
    c->refs = 1; /* the filler's */
    c->used = 0;
    c->capacity = capacity;
    c->slot = slot;
    c->mapped = mapped;
    Py_INCREF(transcript);
    c->transcript = transcript;
    return c;
}

static void oasr_chunk_unref(oasr_chunk *c)
{
    if (--c->refs) return;
    Py_DECREF(c->transcript);
#if defined(__linux__) && defined(MAP_ANONYMOUS)
    if (c->mapped) {
        if (oasr_spare_count < OASR_SPARE_CHUNKS) oasr_spare[oasr_spare_count++] = c;
        else munmap(c, OASR_CHUNK_BYTES);
        return;
    }
#endif
    PyMem_Free(c);
}

/* A zeroed object of `type` in the next free slot (reference count 1, its _chunk field set),
 * or NULL when the chunk is full. */
static PyObject *oasr_chunk_take(oasr_chunk *c, PyTypeObject *type)
{
    PyObject *o;
    if (c->used >= c->capacity) return NULL;
    o = (PyObject *)((char *)c + OASR_SLOTS_OFFSET + c->used * c->slot);
    memset(o, 0, (size_t)c->slot);
    PyObject_Init(o, type);
    *(oasr_chunk **)((char *)o + oasr_chunk_field) = c;
    c->used++;
    c->refs++;
    return o;
}

/* Word's tp_free: a chunked Word gives its slot back to its chunk, any other Word its memory
 * to Python. */
static void oasr_word_free(void *o)
{
    oasr_chunk *c = *(oasr_chunk **)((char *)o + oasr_chunk_field);
    if (c == NULL) oasr_python_free(o);
    else oasr_chunk_unref(c);
}

/* Word's tp_dealloc: drop its references, then free it (oasr_word_free). */
static void oasr_word_dealloc(PyObject *o)
{
    PyTypeObject *type = Py_TYPE(o);
    int i;
    for (i = 0; i < 3; i++) Py_XDECREF(*(PyObject **)((char *)o + oasr_word_refs[i]));
    type->tp_free(o);
    if (type->tp_flags & Py_TPFLAGS_HEAPTYPE) Py_DECREF(type);
}

#endif
