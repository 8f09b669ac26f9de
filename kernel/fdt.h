// A small read-only reader for flattened device trees (DTB format version 17),
// written against the Devicetree Specification (v0.4, chapter 5).
//
// Nodes and properties are named by their byte offset from the start of the
// blob (an int, like a file position); a negative int is an FDT_ERR_* code.
// Every read is bounds-checked against the header's totalsize, so a truncated
// or hostile blob makes these functions return an error, never read outside
// [blob, blob + totalsize) or loop forever: each walk only moves forward
// through the structure block, one token at a time.
//
// Multi-byte values in a DTB are big-endian and property values are only
// 4-byte aligned, so all values are read a byte at a time.
#ifndef FDT_H
#define FDT_H
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

#define FDT_MAGIC       0xd00dfeedu
#define FDT_VERSION     17          // the format we read
#define FDT_HEADER_SIZE 40          // a version 17 header

// Structure block tokens (spec 5.4.1).
#define FDT_BEGIN_NODE  1
#define FDT_END_NODE    2
#define FDT_PROP        3
#define FDT_NOP         4
#define FDT_END         9

// Errors. All negative so they cannot be mistaken for an offset.
#define FDT_ERR_NOTFOUND  (-1)   // no such node / property / string
#define FDT_ERR_BADMAGIC  (-2)   // not a DTB
#define FDT_ERR_BADVERSION (-3)  // not version 17 compatible
#define FDT_ERR_BADHEADER (-4)   // header fields out of range or misaligned
#define FDT_ERR_BADSTRUCT (-5)   // malformed or truncated structure block
#define FDT_ERR_BADOFFSET (-6)   // an offset that is not a node / property
#define FDT_ERR_BADVALUE  (-7)   // property has the wrong length or format
#define FDT_ERR_BADPATH   (-8)   // path not absolute
#define FDT_ERR_BADCELLS  (-9)   // #address-cells / #size-cells unsupported

// A validated blob. Filled by fdt_init(); read-only afterwards.
struct fdt {
  const uint8_t *blob;
  uint32_t totalsize;
  uint32_t version;
  uint32_t boot_cpuid;         // header boot_cpuid_phys
  uint32_t off_rsvmap;
  uint32_t off_struct, size_struct;
  uint32_t off_strings, size_strings;
};

// One property: its name (NUL-terminated, inside the strings block) and its
// raw value (len bytes inside the structure block, 4-byte aligned).
struct fdt_prop {
  const char *name;
  const uint8_t *val;
  uint32_t len;
};

// Big-endian loads from any address (byte by byte: values may be unaligned).
uint32_t fdt_be32(const void *p);
uint64_t fdt_be64(const void *p);

// Header and blob.
// Check the header (magic, version 17, block offsets/sizes/alignment inside
// totalsize, blob 8-byte aligned) and walk the whole structure block once;
// 0 or an FDT_ERR_*. Reads nothing past totalsize; on failure *f is zeroed.
int fdt_init(struct fdt *f, const void *blob);
// A short fixed description of an FDT_ERR_* code.
const char *fdt_strerror(int err);
// Memory reservation map entry i; FDT_ERR_NOTFOUND past the last.
int fdt_rsv_entry(const struct fdt *f, int i, uint64_t *addr, uint64_t *size);

// Nodes. A node is the offset of its FDT_BEGIN_NODE token.
// The root node.
int fdt_root(const struct fdt *f);
// The next node in document order; *depth (if not NULL) is updated: +1 for a
// child, same for a sibling, smaller after climbing out. NOTFOUND at the end.
int fdt_next_node(const struct fdt *f, int node, int *depth);
// First child of node, or FDT_ERR_NOTFOUND.
int fdt_first_child(const struct fdt *f, int node);
// Next sibling of node, or FDT_ERR_NOTFOUND.
int fdt_next_sibling(const struct fdt *f, int node);
// Parent of node (a walk from the root); FDT_ERR_NOTFOUND for the root.
int fdt_parent(const struct fdt *f, int node);
// Unit name ("cpu@0", "" for the root), or NULL if node is not a node.
const char *fdt_node_name(const struct fdt *f, int node);
// Node at an absolute path; a component may omit its unit address ("/soc/serial").
int fdt_path_offset(const struct fdt *f, const char *path);
// Node whose phandle (or linux,phandle) is phandle.
int fdt_node_by_phandle(const struct fdt *f, uint32_t phandle);
// The node's phandle, 0 if it has none.
uint32_t fdt_phandle(const struct fdt *f, int node);
// status absent, "okay" or "ok".
bool fdt_node_enabled(const struct fdt *f, int node);

// Properties. A property is the offset of its FDT_PROP token.
// First / next property of a node; FDT_ERR_NOTFOUND after the last.
int fdt_first_prop(const struct fdt *f, int node);
int fdt_next_prop(const struct fdt *f, int prop);
// Decode the property at offset prop.
int fdt_prop_at(const struct fdt *f, int prop, struct fdt_prop *p);
// Look a property up by name (p may be NULL); 0 or FDT_ERR_NOTFOUND.
int fdt_getprop(const struct fdt *f, int node, const char *name, struct fdt_prop *p);
bool fdt_has_prop(const struct fdt *f, int node, const char *name);

// Property values.
// Cell idx (u32) of a value; FDT_ERR_BADVALUE if the value is too short.
int fdt_prop_u32(const struct fdt_prop *p, uint32_t idx, uint32_t *out);
// A number of ncells (0..2) cells starting at cell idx.
int fdt_prop_cells(const struct fdt_prop *p, uint32_t idx, uint32_t ncells, uint64_t *out);
// A property that is exactly one cell.
int fdt_getprop_u32(const struct fdt *f, int node, const char *name, uint32_t *out);
// A property of one or two cells.
int fdt_getprop_u64(const struct fdt *f, int node, const char *name, uint64_t *out);
// A NUL-terminated string property (the first string of a list).
int fdt_getprop_str(const struct fdt *f, int node, const char *name, const char **out);
// String lists ("a\0b\0"): count, string idx, membership. A value whose last
// byte is not NUL is FDT_ERR_BADVALUE (contains: false).
int fdt_stringlist_count(const struct fdt_prop *p);
int fdt_stringlist_get(const struct fdt_prop *p, int idx, const char **out);
bool fdt_stringlist_contains(const struct fdt_prop *p, const char *s);

// compatible.
// Index of the first of list[0..n) that node's compatible names, or NOTFOUND.
int fdt_node_compatible(const struct fdt *f, int node, const char *const *list, int n);
bool fdt_is_compatible(const struct fdt *f, int node, const char *compat);
// Next node after `after` (from the root if after < 0) compatible with list[0..n).
int fdt_next_compatible(const struct fdt *f, int after, const char *const *list, int n);

// Addresses.
// #address-cells / #size-cells that node sets for its children (defaults 2 / 1).
int fdt_address_cells(const struct fdt *f, int node);
int fdt_size_cells(const struct fdt *f, int node);
// Entry idx of node's reg, using the parent's cells (1..2 address, 0..2 size).
// Addresses are bus addresses: parent ranges are not applied.
int fdt_reg(const struct fdt *f, int node, int idx, uint64_t *addr, uint64_t *size);

#endif
