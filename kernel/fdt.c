// Read-only flattened device tree (DTB v17) reader. See fdt.h.
//
// The blob is four blocks: a 40-byte header, the memory reservation map, the
// structure block (a token stream describing the tree) and the strings block
// (property names). fdt_init() checks the header and then walks the whole
// structure block once, so a blob that passes is well formed: every token lies
// inside the block, nodes nest properly, every property name is a terminated
// string inside the strings block. The accessors still check every offset they
// are given, because callers may pass in any int.
#include "fdt.h"
#include "klib.h"

uint32_t fdt_be32(const void *p) {
  const uint8_t *b = p;
  return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

uint64_t fdt_be64(const void *p) {
  const uint8_t *b = p;
  return (uint64_t)fdt_be32(b) << 32 | fdt_be32(b + 4);
}

static uint32_t align4(uint32_t x) {
  return (x + 3) & ~3u;
}

// Does [off, off+len) lie inside [lo, hi)? In 64 bits so nothing wraps.
static bool inside(uint64_t off, uint64_t len, uint64_t lo, uint64_t hi) {
  return off >= lo && off <= hi && len <= hi - off;
}

//
// Header.
//

// Header field offsets (spec 5.2).
#define H_MAGIC        0
#define H_TOTALSIZE    4
#define H_OFF_STRUCT   8
#define H_OFF_STRINGS  12
#define H_OFF_RSVMAP   16
#define H_VERSION      20
#define H_LAST_COMP    24
#define H_BOOT_CPUID   28
#define H_SIZE_STRINGS 32
#define H_SIZE_STRUCT  36

static int check_rsvmap(const struct fdt *f);
static int check_struct(const struct fdt *f);

// Validate the header and the blob's structure and fill *f. On failure *f is
// zeroed, so any later call on it fails instead of reading through garbage.
int fdt_init(struct fdt *f, const void *blob) {
  const uint8_t *h = blob;
  struct fdt t;
  int r;

  memset(f, 0, sizeof *f);
  // The spec asks for 8-byte alignment; the reservation map's 64-bit entries
  // and the promised 4-byte alignment of property values rely on it.
  if (h == NULL || ((uintptr_t)h & 7) != 0)
    return FDT_ERR_BADHEADER;
  // Only the magic and totalsize are read before totalsize is known to cover
  // the rest of the header.
  if (fdt_be32(h + H_MAGIC) != FDT_MAGIC)
    return FDT_ERR_BADMAGIC;
  t.blob = h;
  t.totalsize = fdt_be32(h + H_TOTALSIZE);
  if (t.totalsize < FDT_HEADER_SIZE || t.totalsize > INT32_MAX)   // offsets are ints
    return FDT_ERR_BADHEADER;

  // Version 17 is the only layout with size_dt_struct, which bounds the walk.
  // last_comp_version says how old a reader may be and still understand it.
  t.version = fdt_be32(h + H_VERSION);
  if (t.version < FDT_VERSION || fdt_be32(h + H_LAST_COMP) > FDT_VERSION)
    return FDT_ERR_BADVERSION;

  t.boot_cpuid = fdt_be32(h + H_BOOT_CPUID);
  t.off_rsvmap = fdt_be32(h + H_OFF_RSVMAP);
  t.off_struct = fdt_be32(h + H_OFF_STRUCT);
  t.size_struct = fdt_be32(h + H_SIZE_STRUCT);
  t.off_strings = fdt_be32(h + H_OFF_STRINGS);
  t.size_strings = fdt_be32(h + H_SIZE_STRINGS);

  // Tokens are 4-byte aligned; reservation entries 8-byte aligned.
  if ((t.off_struct & 3) != 0 || (t.size_struct & 3) != 0 || (t.off_rsvmap & 7) != 0)
    return FDT_ERR_BADHEADER;
  // Each block must lie after the header and inside totalsize.
  if (!inside(t.off_struct, t.size_struct, FDT_HEADER_SIZE, t.totalsize) ||
      !inside(t.off_strings, t.size_strings, FDT_HEADER_SIZE, t.totalsize) ||
      !inside(t.off_rsvmap, 16, FDT_HEADER_SIZE, t.totalsize))
    return FDT_ERR_BADHEADER;

  if ((r = check_rsvmap(&t)) < 0 || (r = check_struct(&t)) < 0)
    return r;
  *f = t;
  return 0;
}

const char *fdt_strerror(int err) {
  switch (err) {
  case 0: return "ok";
  case FDT_ERR_NOTFOUND: return "not found";
  case FDT_ERR_BADMAGIC: return "bad magic";
  case FDT_ERR_BADVERSION: return "unsupported version";
  case FDT_ERR_BADHEADER: return "bad header";
  case FDT_ERR_BADSTRUCT: return "malformed structure block";
  case FDT_ERR_BADOFFSET: return "bad node or property offset";
  case FDT_ERR_BADVALUE: return "bad property value";
  case FDT_ERR_BADPATH: return "bad path";
  case FDT_ERR_BADCELLS: return "unsupported #address-cells/#size-cells";
  default: return "unknown error";
  }
}

// The reservation map is a list of (address, size) pairs ended by (0, 0).
// Make sure the end marker is there before anyone walks it.
static int check_rsvmap(const struct fdt *f) {
  for (uint64_t off = f->off_rsvmap; off + 16 <= f->totalsize; off += 16)
    if (fdt_be64(f->blob + off) == 0 && fdt_be64(f->blob + off + 8) == 0)
      return 0;
  return FDT_ERR_BADHEADER;
}

// Entry i of the memory reservation map; FDT_ERR_NOTFOUND past the last.
int fdt_rsv_entry(const struct fdt *f, int i, uint64_t *addr, uint64_t *size) {
  if (i < 0)
    return FDT_ERR_NOTFOUND;
  for (uint64_t off = f->off_rsvmap; off + 16 <= f->totalsize; off += 16, i--) {
    uint64_t a = fdt_be64(f->blob + off), s = fdt_be64(f->blob + off + 8);
    if (a == 0 && s == 0)
      return FDT_ERR_NOTFOUND;
    if (i == 0) {
      *addr = a;
      *size = s;
      return 0;
    }
  }
  return FDT_ERR_NOTFOUND;
}

//
// Structure block tokens.
//

// Decode the token at off. Returns its tag and sets *next to the following
// token (past a node's name or a property's value), or FDT_ERR_BADSTRUCT if
// the token or what it carries would run past the end of the block. *next is
// always at least off + 4, which is what bounds every walk in this file.
static int token(const struct fdt *f, int64_t off, uint32_t *next) {
  uint32_t end = f->off_struct + f->size_struct;  // fits: checked against totalsize
  uint32_t o, len;
  size_t n;

  if (off < f->off_struct || off > end || end - off < 4 || (off & 3) != 0)
    return FDT_ERR_BADSTRUCT;
  o = (uint32_t)off;
  uint32_t tag = fdt_be32(f->blob + o);
  o += 4;
  switch (tag) {
  case FDT_BEGIN_NODE:
    // The unit name, NUL-terminated and padded to 4 bytes.
    n = strnlen((const char *)f->blob + o, end - o);
    if (n == end - o)
      return FDT_ERR_BADSTRUCT;
    o = align4(o + (uint32_t)n + 1);
    break;
  case FDT_PROP:
    // len, nameoff, then len bytes of value padded to 4.
    if (end - o < 8)
      return FDT_ERR_BADSTRUCT;
    len = fdt_be32(f->blob + o);
    if (len > end - o - 8)
      return FDT_ERR_BADSTRUCT;
    o = align4(o + 8 + len);   // end is 4-aligned, so still <= end
    break;
  case FDT_END_NODE:
  case FDT_NOP:
  case FDT_END:
    break;
  default:
    return FDT_ERR_BADSTRUCT;
  }
  *next = o;
  return (int)tag;
}

// Decode the property whose FDT_PROP token is at off.
static int prop_read(const struct fdt *f, int64_t off, struct fdt_prop *p) {
  uint32_t next, nameoff, room;
  int tag = token(f, off, &next);

  if (tag < 0)
    return tag;
  if (tag != FDT_PROP)
    return FDT_ERR_BADOFFSET;
  // The name is an offset into the strings block; it must be a string that
  // ends inside that block.
  nameoff = fdt_be32(f->blob + off + 8);
  if (nameoff >= f->size_strings)
    return FDT_ERR_BADSTRUCT;
  room = f->size_strings - nameoff;
  p->name = (const char *)f->blob + f->off_strings + nameoff;
  if (strnlen(p->name, room) == room)
    return FDT_ERR_BADSTRUCT;
  p->len = fdt_be32(f->blob + off + 4);
  p->val = f->blob + off + 12;
  return 0;
}

// The walk fdt_init() does once: every token well formed, exactly one root
// node, nodes balanced, properties inside a node, FDT_END after the root.
static int check_struct(const struct fdt *f) {
  uint32_t off = f->off_struct, next;
  int depth = 0;
  bool seen_root = false;
  struct fdt_prop p;

  for (;;) {
    int tag = token(f, off, &next);
    if (tag < 0)
      return tag;
    switch (tag) {
    case FDT_BEGIN_NODE:
      if (depth == 0 && seen_root)
        return FDT_ERR_BADSTRUCT;       // a second root
      seen_root = true;
      depth++;
      break;
    case FDT_END_NODE:
      if (depth == 0)
        return FDT_ERR_BADSTRUCT;
      depth--;
      break;
    case FDT_PROP:
      if (depth == 0 || prop_read(f, off, &p) < 0)
        return FDT_ERR_BADSTRUCT;
      break;
    case FDT_END:
      return seen_root && depth == 0 ? 0 : FDT_ERR_BADSTRUCT;
    }
    off = next;
  }
}

// If node is the offset of an FDT_BEGIN_NODE token, set *body to the token
// after it (the node's first property or child).
static int node_body(const struct fdt *f, int node, uint32_t *body) {
  int tag;

  if (node < 0)
    return FDT_ERR_BADOFFSET;
  tag = token(f, node, body);
  if (tag < 0)
    return FDT_ERR_BADOFFSET;
  return tag == FDT_BEGIN_NODE ? 0 : FDT_ERR_BADOFFSET;
}

//
// Nodes.
//

int fdt_root(const struct fdt *f) {
  uint32_t off = f->off_struct, next;

  for (;;) {
    int tag = token(f, off, &next);
    if (tag < 0)
      return tag;
    if (tag == FDT_BEGIN_NODE)
      return (int)off;
    if (tag != FDT_NOP)
      return FDT_ERR_BADSTRUCT;
    off = next;
  }
}

// The node after node in document order. If depth is not NULL, *depth goes in
// as node's depth and comes out as the returned node's: +1 for a child, the
// same for a sibling, less once the walk has climbed out of node's parent.
int fdt_next_node(const struct fdt *f, int node, int *depth) {
  uint32_t off, next;
  int d = depth ? *depth : 0;
  int r = node_body(f, node, &off);

  if (r < 0)
    return r;
  for (;;) {
    int tag = token(f, off, &next);
    if (tag < 0)
      return tag;
    switch (tag) {
    case FDT_BEGIN_NODE:
      if (depth)
        *depth = d + 1;
      return (int)off;
    case FDT_END_NODE:
      d--;
      break;
    case FDT_END:
      return FDT_ERR_NOTFOUND;
    }
    off = next;
  }
}

int fdt_first_child(const struct fdt *f, int node) {
  int depth = 0;
  int n = fdt_next_node(f, node, &depth);

  if (n < 0)
    return n;
  return depth == 1 ? n : FDT_ERR_NOTFOUND;
}

int fdt_next_sibling(const struct fdt *f, int node) {
  int depth = 0;

  // Skip node's descendants (depth > 0); stop at a node at our level, or
  // give up once the walk leaves our parent. Offsets only grow, so this ends.
  for (;;) {
    node = fdt_next_node(f, node, &depth);
    if (node < 0)
      return node;
    if (depth == 0)
      return node;
    if (depth < 0)
      return FDT_ERR_NOTFOUND;
  }
}

// Depth of node below the root (root = 0), found by walking from the root.
static int node_depth(const struct fdt *f, int node) {
  int depth = 0;
  int n = fdt_root(f);

  while (n >= 0 && n < node)
    n = fdt_next_node(f, n, &depth);
  if (n == node)
    return depth;
  return n == FDT_ERR_NOTFOUND || n >= 0 ? FDT_ERR_BADOFFSET : n;
}

// The parent is the last node at depth - 1 before node in document order.
// The format has no back links, so this is two walks from the root.
int fdt_parent(const struct fdt *f, int node) {
  int depth = 0, target, parent = FDT_ERR_NOTFOUND;
  int n = fdt_root(f);

  target = node_depth(f, node);
  if (target < 0)
    return target;
  if (target == 0)
    return FDT_ERR_NOTFOUND;    // the root has no parent
  while (n >= 0 && n < node) {
    if (depth == target - 1)
      parent = n;
    n = fdt_next_node(f, n, &depth);
  }
  return n < 0 ? n : parent;
}

// The node's unit name ("cpu@0"; "" for the root), or NULL for a bad offset.
const char *fdt_node_name(const struct fdt *f, int node) {
  uint32_t body;

  if (node_body(f, node, &body) < 0)
    return NULL;
  return (const char *)f->blob + node + 4;
}

// Does the unit name match the path component comp[0..len)? A component with
// no unit address ("memory") also matches "memory@80000000".
static bool name_matches(const char *name, const char *comp, size_t len) {
  bool comp_has_at = false;

  if (strncmp(name, comp, len) != 0)
    return false;
  // name's first len chars equal comp's, none of which is NUL, so name[len]
  // is still inside name.
  if (name[len] == '\0')
    return true;
  for (size_t i = 0; i < len; i++)
    if (comp[i] == '@')
      comp_has_at = true;
  return name[len] == '@' && !comp_has_at;
}

// Node at an absolute path such as "/soc/serial@10000000" or "/cpus/cpu@0".
// Aliases are not supported.
int fdt_path_offset(const struct fdt *f, const char *path) {
  int node, child;
  size_t len;

  if (path == NULL || path[0] != '/')
    return FDT_ERR_BADPATH;
  node = fdt_root(f);
  if (node < 0)
    return node;
  for (;;) {
    while (*path == '/')
      path++;
    if (*path == '\0')
      return node;
    for (len = 0; path[len] != '\0' && path[len] != '/'; len++)
      ;
    for (child = fdt_first_child(f, node); child >= 0; child = fdt_next_sibling(f, child))
      if (name_matches(fdt_node_name(f, child), path, len))
        break;
    if (child < 0)
      return child;
    node = child;
    path += len;
  }
}

uint32_t fdt_phandle(const struct fdt *f, int node) {
  uint32_t ph;

  if (fdt_getprop_u32(f, node, "phandle", &ph) == 0 ||
      fdt_getprop_u32(f, node, "linux,phandle", &ph) == 0)   // older trees
    return ph;
  return 0;
}

int fdt_node_by_phandle(const struct fdt *f, uint32_t phandle) {
  int n;

  // 0 and ~0 are never valid phandles (spec 2.3.3).
  if (phandle == 0 || phandle == 0xffffffffu)
    return FDT_ERR_NOTFOUND;
  for (n = fdt_root(f); n >= 0; n = fdt_next_node(f, n, NULL))
    if (fdt_phandle(f, n) == phandle)
      return n;
  return n;
}

// status absent, "okay" or the legacy "ok" means the device is usable.
bool fdt_node_enabled(const struct fdt *f, int node) {
  const char *s;
  int r = fdt_getprop_str(f, node, "status", &s);

  if (r == FDT_ERR_NOTFOUND)
    return true;
  return r == 0 && (strcmp(s, "okay") == 0 || strcmp(s, "ok") == 0);
}

//
// Properties. They come before a node's children, so a node's property list
// ends at its first FDT_BEGIN_NODE (or its FDT_END_NODE).
//

// The first FDT_PROP at or after off, skipping NOPs.
static int prop_from(const struct fdt *f, uint32_t off) {
  uint32_t next;

  for (;;) {
    int tag = token(f, off, &next);
    if (tag < 0)
      return tag;
    if (tag == FDT_PROP)
      return (int)off;
    if (tag != FDT_NOP)
      return FDT_ERR_NOTFOUND;
    off = next;
  }
}

int fdt_first_prop(const struct fdt *f, int node) {
  uint32_t body;
  int r = node_body(f, node, &body);

  return r < 0 ? r : prop_from(f, body);
}

int fdt_next_prop(const struct fdt *f, int prop) {
  uint32_t next;
  int tag = prop < 0 ? FDT_ERR_BADOFFSET : token(f, prop, &next);

  if (tag < 0)
    return FDT_ERR_BADOFFSET;
  if (tag != FDT_PROP)
    return FDT_ERR_BADOFFSET;
  return prop_from(f, next);
}

int fdt_prop_at(const struct fdt *f, int prop, struct fdt_prop *p) {
  if (prop < 0)
    return FDT_ERR_BADOFFSET;
  return prop_read(f, prop, p);
}

int fdt_getprop(const struct fdt *f, int node, const char *name, struct fdt_prop *p) {
  struct fdt_prop q;
  int off, r;

  for (off = fdt_first_prop(f, node); off >= 0; off = fdt_next_prop(f, off)) {
    if ((r = prop_read(f, off, &q)) < 0)
      return r;
    if (strcmp(q.name, name) == 0) {
      if (p)
        *p = q;
      return 0;
    }
  }
  return off;
}

bool fdt_has_prop(const struct fdt *f, int node, const char *name) {
  return fdt_getprop(f, node, name, NULL) == 0;
}

//
// Property values.
//

// Cell idx (a big-endian u32) of the value.
int fdt_prop_u32(const struct fdt_prop *p, uint32_t idx, uint32_t *out) {
  if (idx >= p->len / 4)
    return FDT_ERR_BADVALUE;
  *out = fdt_be32(p->val + 4 * (size_t)idx);
  return 0;
}

// The number held in ncells (0, 1 or 2) cells starting at cell idx, as used
// by reg, ranges and the like.
int fdt_prop_cells(const struct fdt_prop *p, uint32_t idx, uint32_t ncells, uint64_t *out) {
  uint64_t v = 0;

  if (ncells > 2)
    return FDT_ERR_BADCELLS;
  if ((uint64_t)idx + ncells > p->len / 4)
    return FDT_ERR_BADVALUE;
  for (uint32_t i = 0; i < ncells; i++)
    v = v << 32 | fdt_be32(p->val + 4 * ((size_t)idx + i));
  *out = v;
  return 0;
}

// A property that must be exactly one cell.
int fdt_getprop_u32(const struct fdt *f, int node, const char *name, uint32_t *out) {
  struct fdt_prop p;
  int r = fdt_getprop(f, node, name, &p);

  if (r < 0)
    return r;
  if (p.len != 4)
    return FDT_ERR_BADVALUE;
  *out = fdt_be32(p.val);
  return 0;
}

// A property of one or two cells (e.g. timebase-frequency, clock-frequency).
int fdt_getprop_u64(const struct fdt *f, int node, const char *name, uint64_t *out) {
  struct fdt_prop p;
  int r = fdt_getprop(f, node, name, &p);

  if (r < 0)
    return r;
  if (p.len != 4 && p.len != 8)
    return FDT_ERR_BADVALUE;
  return fdt_prop_cells(&p, 0, p.len / 4, out);
}

// A string property: the value must end with a NUL inside its length.
// (For a string list this gives the first string.)
int fdt_getprop_str(const struct fdt *f, int node, const char *name, const char **out) {
  struct fdt_prop p;
  int r = fdt_getprop(f, node, name, &p);

  if (r < 0)
    return r;
  if (p.len == 0 || p.val[p.len - 1] != '\0')
    return FDT_ERR_BADVALUE;
  *out = (const char *)p.val;
  return 0;
}

// A string list is strings laid end to end, each with its NUL; an empty value
// is an empty list. Once the last byte is known to be NUL, strlen() on any
// string in it stays inside the value.
static bool strlist_ok(const struct fdt_prop *p) {
  return p->len == 0 || p->val[p->len - 1] == '\0';
}

int fdt_stringlist_count(const struct fdt_prop *p) {
  int n = 0;

  if (!strlist_ok(p))
    return FDT_ERR_BADVALUE;
  for (uint32_t i = 0; i < p->len; i++)
    if (p->val[i] == '\0')
      n++;
  return n;
}

int fdt_stringlist_get(const struct fdt_prop *p, int idx, const char **out) {
  uint32_t off = 0;

  if (!strlist_ok(p))
    return FDT_ERR_BADVALUE;
  for (int i = 0; off < p->len; i++) {
    const char *s = (const char *)p->val + off;
    if (i == idx) {
      *out = s;
      return 0;
    }
    off += (uint32_t)strlen(s) + 1;
  }
  return FDT_ERR_NOTFOUND;
}

bool fdt_stringlist_contains(const struct fdt_prop *p, const char *s) {
  uint32_t off = 0;

  if (!strlist_ok(p))
    return false;
  while (off < p->len) {
    const char *t = (const char *)p->val + off;
    if (strcmp(t, s) == 0)
      return true;
    off += (uint32_t)strlen(t) + 1;
  }
  return false;
}

//
// compatible.
//

// Index in list[0..n) of the first entry the node's compatible names, or
// FDT_ERR_NOTFOUND.
int fdt_node_compatible(const struct fdt *f, int node, const char *const *list, int n) {
  struct fdt_prop p;
  int r = fdt_getprop(f, node, "compatible", &p);

  if (r < 0)
    return r;
  for (int i = 0; i < n; i++)
    if (fdt_stringlist_contains(&p, list[i]))
      return i;
  return FDT_ERR_NOTFOUND;
}

bool fdt_is_compatible(const struct fdt *f, int node, const char *compat) {
  return fdt_node_compatible(f, node, &compat, 1) >= 0;
}

// The next node after `after` in document order (from the root, inclusive, if
// after < 0) compatible with any of list[0..n).
int fdt_next_compatible(const struct fdt *f, int after, const char *const *list, int n) {
  int node = after < 0 ? fdt_root(f) : fdt_next_node(f, after, NULL);

  for (; node >= 0; node = fdt_next_node(f, node, NULL))
    if (fdt_node_compatible(f, node, list, n) >= 0)
      return node;
  return node;
}

//
// Addresses.
//

// #address-cells / #size-cells a node sets for its children, with the
// spec's defaults (2 and 1) when absent.
static int cells(const struct fdt *f, int node, const char *name, uint32_t dflt) {
  uint32_t v;
  int r = fdt_getprop_u32(f, node, name, &v);

  if (r == FDT_ERR_NOTFOUND)
    v = dflt;
  else if (r < 0)
    return r;
  return v > 4 ? FDT_ERR_BADCELLS : (int)v;
}

int fdt_address_cells(const struct fdt *f, int node) {
  return cells(f, node, "#address-cells", 2);
}

int fdt_size_cells(const struct fdt *f, int node) {
  return cells(f, node, "#size-cells", 1);
}

// Entry idx of node's reg, decoded with its parent's #address-cells and
// #size-cells (each at most 2 here). The address is in the parent's address
// space: bus ranges are not translated.
int fdt_reg(const struct fdt *f, int node, int idx, uint64_t *addr, uint64_t *size) {
  struct fdt_prop p;
  int parent, ac, sc, r;
  uint32_t entry;

  if ((parent = fdt_parent(f, node)) < 0)
    return parent == FDT_ERR_NOTFOUND ? FDT_ERR_BADOFFSET : parent;
  if ((ac = fdt_address_cells(f, parent)) < 0)
    return ac;
  if ((sc = fdt_size_cells(f, parent)) < 0)
    return sc;
  if (ac < 1 || ac > 2 || sc > 2)
    return FDT_ERR_BADCELLS;
  if ((r = fdt_getprop(f, node, "reg", &p)) < 0)
    return r;
  entry = (uint32_t)(ac + sc);
  if (p.len % (4 * entry) != 0)
    return FDT_ERR_BADVALUE;
  if (idx < 0 || (uint32_t)idx >= p.len / (4 * entry))
    return FDT_ERR_NOTFOUND;
  if ((r = fdt_prop_cells(&p, (uint32_t)idx * entry, (uint32_t)ac, addr)) < 0)
    return r;
  return fdt_prop_cells(&p, (uint32_t)idx * entry + (uint32_t)ac, (uint32_t)sc, size);
}
