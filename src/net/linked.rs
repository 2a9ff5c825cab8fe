//! Entries that live in the caller's own structs, on list heads the caller
//! owns: a legacy model whose `struct list_head` members are its lists and
//! whose entry type (awnn's `param_t`, `lcache_t`) embeds the node. nnmem
//! keeps what the legacy code did by hand or not at all: the names and
//! their O(1) lookup, who owns which buffer, which entry is a shallow copy
//! (a view) of which, and when an entry, with the buffers it owns, is to be
//! given back. The caller's structs and lists are linked and unlinked by the
//! C layer (`ffi::net::linked`); this module decides, on addresses it only
//! compares.
//!
//! Ownership is decided from the buffers, as legacy code hands them over:
//! - a buffer no entry owns yet is adopted by the entry (given back with
//!   it), unless the caller says it stays its own (borrowed);
//! - a data buffer that an entry already owns makes the new entry a view of
//!   that entry: it owns nothing of it, and goes when that entry goes;
//! - no data buffer makes a placeholder (the net's input), which may still
//!   own a gradient buffer of its own;
//! - no tensors at all makes a bare entry (a layer cache).
//!
//! A net whose entries are all placeholders, after one of its entries went,
//! has nothing left that a placeholder feeds: [`Linked::spent`] says so, so
//! that a net nobody holds a handle to can give itself back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use super::names::NameIndex;
use crate::status::{Error, Result};

/// An address, only compared.
pub type Key = usize;

/// The entry owns its data buffer (C: `NNM_OWNS_DATA`).
pub const OWNS_DATA: u32 = 1;
/// The entry owns its gradient buffer (C: `NNM_OWNS_DIFF`).
pub const OWNS_DIFF: u32 = 2;

/// One tensor of an entry as the caller hands it over: its buffer's
/// address (0: none) and whether the caller keeps it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Buffer {
    /// The buffer's address; 0 for none.
    pub address: Key,
    /// The caller keeps it: never adopted, never given back.
    pub borrowed: bool,
}

/// What an entry is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// No tensors (a layer cache).
    Bare,
    /// No data buffer: the net's input, bound later.
    Placeholder,
    /// A data buffer: owned, borrowed, or a view of another entry's.
    Tensor,
}

/// Link order across every net (nets join, so one counter for all).
static NEXT_SEQ: AtomicU64 = AtomicU64::new(0);

/// One entry.
#[derive(Debug)]
pub struct Entry<N> {
    /// The list it is on.
    pub list: Key,
    /// Its name.
    pub name: Box<[u8]>,
    /// When it was linked: lists are given back in this order.
    pub seq: u64,
    /// What it is.
    pub role: Role,
    /// OWNS_DATA and OWNS_DIFF bits: what goes back with it.
    pub owned: u32,
    /// Its data and gradient buffers (0: none).
    pub buffers: [Key; 2],
    /// The entry whose data it shares, if it is a view.
    pub view_of: Option<Key>,
    /// Entries that are views of it.
    pub viewers: Vec<Key>,
    /// The C layer's value (the node and how to give the entry back).
    pub value: N,
}

/// What [`Linked::take_all`] gives: the entries, then the lists' heads.
pub type Taken<N, H> = (Vec<(Key, Entry<N>)>, Vec<(Key, H)>);

/// One list: the caller's head, and its names in insertion order.
#[derive(Debug)]
struct List<H: Copy> {
    head: Key,
    value: H,
    names: NameIndex<Key>,
}

/// The lists a net adopted and their entries. `N` is what the C layer
/// keeps per entry, `H` per list.
#[derive(Debug)]
pub struct Linked<N, H: Copy> {
    lists: Vec<List<H>>,
    entries: HashMap<Key, Entry<N>>,
    /// Owned buffer -> the entry that owns it.
    owners: HashMap<Key, Key>,
    /// Entries that are not placeholders.
    substantive: usize,
}

impl<N, H: Copy> Default for Linked<N, H> {
    fn default() -> Self {
        Linked { lists: Vec::new(), entries: HashMap::new(), owners: HashMap::new(), substantive: 0 }
    }
}

fn shown(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

impl<N, H: Copy> Linked<N, H> {
    /// Adopts the list whose head is `head`, with the C layer's `value`.
    pub fn adopt(&mut self, head: Key, value: H) -> Result<()> {
        if self.has_list(head) {
            return Err(Error::invalid(format!("list head ({head:#x}) is already one of this net's lists")));
        }
        if self.entries.contains_key(&head) {
            return Err(Error::invalid(format!("list head ({head:#x}) is the node of one of this net's entries")));
        }
        self.lists.push(List { head, value, names: NameIndex::new() });
        Ok(())
    }

    /// Whether `head` is one of the adopted lists.
    pub fn has_list(&self, head: Key) -> bool {
        self.lists.iter().any(|l| l.head == head)
    }

    /// The adopted lists' heads and values, in the order they were adopted.
    pub fn lists(&self) -> impl Iterator<Item = (Key, H)> + '_ {
        self.lists.iter().map(|l| (l.head, l.value))
    }

    fn list(&self, head: Key) -> Result<&List<H>> {
        self.lists
            .iter()
            .find(|l| l.head == head)
            .ok_or_else(|| Error::invalid(format!("list ({head:#x}) is not one of this net's adopted lists")))
    }

    /// The entry named `name` on the list `head`. O(1).
    pub fn lookup(&self, head: Key, name: &[u8]) -> Result<Key> {
        let names = &self.list(head)?.names;
        let position = names.find("entry", name)?;
        Ok(names.name(position).and_then(|n| names.get(n)).expect("a found name has a value"))
    }

    /// The entry at `node`.
    pub fn entry(&self, node: Key) -> Option<&Entry<N>> {
        self.entries.get(&node)
    }

    /// The buffer `address` is owned by an entry of this net.
    pub fn owns(&self, address: Key) -> bool {
        self.owners.contains_key(&address)
    }

    /// The nodes of every entry.
    pub fn nodes(&self) -> impl Iterator<Item = Key> + '_ {
        self.entries.keys().copied()
    }

    /// The buffers entries own, with their owners.
    pub fn owned_buffers(&self) -> impl Iterator<Item = Key> + '_ {
        self.owners.keys().copied()
    }

    /// The entries of the list `head`, in the order they were linked.
    pub fn entries_of(&self, head: Key) -> Result<Vec<Key>> {
        let names = &self.list(head)?.names;
        let mut keys: Vec<Key> = (0..names.len()).filter_map(|p| names.name(p).and_then(|n| names.get(n))).collect();
        keys.sort_by_key(|k| self.entries.get(k).map_or(0, |e| e.seq));
        Ok(keys)
    }

    /// Entries on the list `head` (0 for a list this net did not adopt).
    pub fn list_len(&self, head: Key) -> usize {
        self.list(head).map_or(0, |l| l.names.len())
    }

    /// Entries on all lists.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether every entry left is a placeholder: nothing is left that the
    /// net's input feeds.
    pub fn spent(&self) -> bool {
        self.substantive == 0
    }

    /// Checks a new entry at `node` named `name` on the list `head` with
    /// these buffers (`tensors` None: a bare entry) and, when it can be
    /// linked, links it; nothing changes when it fails.
    pub fn link(&mut self, head: Key, name: &[u8], node: Key, tensors: Option<[Buffer; 2]>, value: N) -> Result<()> {
        let list = self.list(head)?;
        list.names.check_new("entry", name)?;
        if self.entries.contains_key(&node) || self.has_list(node) {
            return Err(Error::invalid(format!(
                "node ({node:#x}) of \"{}\" is already linked: the node of an entry or a list of this net",
                shown(name)
            )));
        }
        let (role, owned, buffers, view_of) = match tensors {
            None => (Role::Bare, 0, [0, 0], None),
            Some(t) => self.classify(name, t)?,
        };
        if let Some(owner) = view_of {
            let owner = self.entries.get_mut(&owner).expect("an owner is an entry");
            owner
                .viewers
                .try_reserve(1)
                .map_err(|_| Error::new(crate::status::Status::OutOfMemory, "no memory to record a view"))?;
            owner.viewers.push(node);
        }
        let list = self.lists.iter_mut().find(|l| l.head == head).expect("checked above");
        if let Err(e) = list.names.insert("entry", name, node) {
            if let Some(owner) = view_of {
                self.entries.get_mut(&owner).expect("an owner is an entry").viewers.pop();
            }
            return Err(e);
        }
        for (bit, &address) in [OWNS_DATA, OWNS_DIFF].iter().zip(&buffers) {
            if owned & bit != 0 {
                self.owners.insert(address, node);
            }
        }
        if role != Role::Placeholder {
            self.substantive += 1;
        }
        let seq = NEXT_SEQ.fetch_add(1, Ordering::Relaxed);
        let entry =
            Entry { list: head, name: name.into(), seq, role, owned, buffers, view_of, viewers: Vec::new(), value };
        self.entries.insert(node, entry);
        Ok(())
    }

    /// What an entry with these buffers is, owns and views.
    fn classify(&self, name: &[u8], [data, diff]: [Buffer; 2]) -> Result<(Role, u32, [Key; 2], Option<Key>)> {
        let view_of = match data.address {
            0 => None,
            a if data.borrowed => {
                if let Some(&owner) = self.owners.get(&a) {
                    return Err(self.owned_elsewhere(name, "data", a, owner));
                }
                None
            }
            a => match self.owners.get(&a) {
                // Only a data buffer makes a view: a shallow copy of an
                // entry shares its data (a gradient buffer given as data
                // would view nothing the entry's detach could follow).
                Some(&owner) if self.entries.get(&owner).is_some_and(|o| o.buffers[0] == a) => Some(owner),
                Some(&owner) => return Err(self.owned_elsewhere(name, "data", a, owner)),
                None => None,
            },
        };
        let role = if data.address == 0 { Role::Placeholder } else { Role::Tensor };
        let mut owned = 0;
        if data.address != 0 && !data.borrowed && view_of.is_none() {
            owned |= OWNS_DATA;
        }
        if diff.address != 0 {
            if diff.address == data.address {
                return Err(Error::invalid(format!(
                    "\"{}\": diff and data are the same buffer ({:#x}), which would be given back twice",
                    shown(name),
                    diff.address
                )));
            }
            let shared = view_of.and_then(|o| self.entries.get(&o)).is_some_and(|o| o.buffers[1] == diff.address);
            match self.owners.get(&diff.address) {
                _ if shared => {}
                Some(&owner) => return Err(self.owned_elsewhere(name, "diff", diff.address, owner)),
                None if !diff.borrowed => owned |= OWNS_DIFF,
                None => {}
            }
        }
        Ok((role, owned, [data.address, diff.address], view_of))
    }

    #[cold]
    fn owned_elsewhere(&self, name: &[u8], which: &str, address: Key, owner: Key) -> Error {
        let owner_name = self.name_of(owner).unwrap_or_default();
        Error::invalid(format!(
            "\"{}\": its {which} buffer ({address:#x}) is owned by entry \"{owner_name}\"; only a data buffer may be \
             shared, by a view of that entry (with the entry's own diff)",
            shown(name)
        ))
    }

    /// The name of the entry at `node`.
    pub fn name_of(&self, node: Key) -> Option<String> {
        self.entries.get(&node).map(|e| shown(&e.name))
    }

    /// Removes the entry at `node` and the entries that view it (they share
    /// its data, which goes with it): returned viewers first, the entry
    /// last, each with its value, so that the C layer unlinks and gives
    /// back each. INVALID_ARGUMENT when `node` is no entry of this net.
    pub fn unlink(&mut self, node: Key) -> Result<Vec<(Key, Entry<N>)>> {
        let Some(entry) = self.entries.get(&node) else {
            return Err(Error::invalid(format!(
                "node ({node:#x}) is not the node of an entry of this net (already detached, another net's, or not \
                 an entry)"
            )));
        };
        let mut order = entry.viewers.clone();
        order.push(node);
        let mut gone = Vec::with_capacity(order.len());
        for key in order {
            let e = self.entries.remove(&key).expect("viewers are entries");
            if let Some(list) = self.lists.iter_mut().find(|l| l.head == e.list) {
                list.names.remove(&e.name);
            }
            for (bit, address) in [OWNS_DATA, OWNS_DIFF].iter().zip(e.buffers) {
                if e.owned & bit != 0 {
                    self.owners.remove(&address);
                }
            }
            if let Some(owner) = e.view_of.and_then(|o| self.entries.get_mut(&o)) {
                owner.viewers.retain(|&v| v != key);
            }
            if e.role != Role::Placeholder {
                self.substantive -= 1;
            }
            gone.push((key, e));
        }
        Ok(gone)
    }

    /// Removes every entry and list: views first (they own nothing), then
    /// the rest, in the order they were linked.
    pub fn take_all(&mut self) -> Taken<N, H> {
        let mut order: Vec<Key> = self.entries.keys().copied().collect();
        order.sort_by_key(|k| self.entries.get(k).map_or((1, 0), |e| (u8::from(e.view_of.is_none()), e.seq)));
        let entries = order.into_iter().filter_map(|k| self.entries.remove(&k).map(|e| (k, e))).collect();
        let lists = self.lists.drain(..).map(|l| (l.head, l.value)).collect();
        self.owners.clear();
        self.substantive = 0;
        (entries, lists)
    }

    /// Takes over every list and entry of `other` (a net joined to this one
    /// by a view across them).
    pub fn absorb(&mut self, other: &mut Linked<N, H>) {
        self.lists.append(&mut other.lists);
        self.entries.extend(other.entries.drain());
        self.owners.extend(other.owners.drain());
        self.substantive += std::mem::take(&mut other.substantive);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::Status;

    const fn own(address: Key) -> Buffer {
        Buffer { address, borrowed: false }
    }
    const NONE: Buffer = Buffer { address: 0, borrowed: false };

    fn net() -> Linked<char, ()> {
        let mut l = Linked::default();
        for head in [1, 2, 3] {
            l.adopt(head, ()).unwrap();
        }
        l
    }

    #[test]
    fn fresh_buffers_are_owned_and_shared_data_makes_a_view() {
        let mut l = net();
        l.link(1, b"fc0.out", 100, Some([own(0x1000), own(0x2000)]), 'o').unwrap();
        l.link(2, b"fc1.in", 200, Some([own(0x1000), own(0x2000)]), 'i').unwrap();
        let out = l.entry(100).unwrap();
        assert_eq!((out.owned, out.viewers.as_slice()), (OWNS_DATA | OWNS_DIFF, &[200][..]));
        let input = l.entry(200).unwrap();
        assert_eq!((input.owned, input.view_of, input.role), (0, Some(100), Role::Tensor));
        assert_eq!(l.lookup(2, b"fc1.in").unwrap(), 200);
        assert_eq!(l.lookup(1, b"fc1.in").unwrap_err().status(), Status::NotFound);
        assert_eq!(l.name_of(200).as_deref(), Some("fc1.in"));
    }

    #[test]
    fn a_placeholder_owns_its_own_gradient_and_borrowed_buffers_stay_the_callers() {
        let mut l = net();
        l.link(2, b"x", 10, Some([NONE, own(0x30)]), 'x').unwrap();
        let x = l.entry(10).unwrap();
        assert_eq!((x.role, x.owned), (Role::Placeholder, OWNS_DIFF));
        let kept = Buffer { address: 0x40, borrowed: true };
        l.link(1, b"w", 11, Some([kept, NONE]), 'w').unwrap();
        assert_eq!(l.entry(11).unwrap().owned, 0);
        assert!(!l.owns(0x40) && l.owns(0x30));
        assert_eq!(l.entry(11).unwrap().view_of, None, "a borrowed buffer is nobody's to view");
    }

    #[test]
    fn unlinking_an_owner_takes_its_views_and_only_placeholders_left_means_spent() {
        let mut l = net();
        l.link(2, b"x", 10, Some([NONE, own(0x30)]), 'x').unwrap();
        l.link(1, b"a", 20, Some([own(0x100), own(0x200)]), 'a').unwrap();
        l.link(2, b"a.in", 21, Some([own(0x100), own(0x200)]), 'v').unwrap();
        l.link(3, b"cache", 30, None, 'c').unwrap();
        assert!(!l.spent());
        let gone = l.unlink(20).unwrap();
        assert_eq!(gone.iter().map(|(k, e)| (*k, e.owned)).collect::<Vec<_>>(), [(21, 0), (20, 3)]);
        assert!(l.lookup(2, b"a.in").is_err() && !l.owns(0x100));
        assert!(!l.spent(), "the cache is left");
        l.unlink(30).unwrap();
        assert!(l.spent());
        assert_eq!(l.len(), 1);
        assert_eq!(l.unlink(30).unwrap_err().status(), Status::InvalidArgument);
        l.link(1, b"a", 20, Some([own(0x100), NONE]), 'a').unwrap();
        assert!(!l.spent(), "a name and a buffer are free again once their entry went");
    }

    #[test]
    fn refusals_change_nothing() {
        let mut l = net();
        l.link(1, b"a", 20, Some([own(0x100), own(0x200)]), 'a').unwrap();
        let refuse =
            |l: &mut Linked<char, ()>, head, name: &[u8], node, t| l.link(head, name, node, t, '?').unwrap_err();
        assert_eq!(refuse(&mut l, 1, b"a", 21, None).status(), Status::AlreadyExists);
        assert!(refuse(&mut l, 1, b"b", 20, None).message().contains("already linked"));
        assert!(refuse(&mut l, 1, b"b", 2, None).message().contains("already linked"));
        assert!(refuse(&mut l, 9, b"b", 21, None).message().contains("not one of this net's adopted lists"));
        let e = refuse(&mut l, 1, b"b", 21, Some([own(0x300), own(0x200)]));
        assert!(e.message().contains("diff buffer (0x200) is owned by entry \"a\""), "{}", e.message());
        let e = refuse(&mut l, 1, b"b", 21, Some([own(0x300), own(0x300)]));
        assert!(e.message().contains("same buffer"), "{}", e.message());
        let e = refuse(&mut l, 1, b"b", 21, Some([Buffer { address: 0x100, borrowed: true }, NONE]));
        assert!(e.message().contains("data buffer (0x100) is owned by entry \"a\""), "{}", e.message());
        assert_eq!((l.len(), l.entry(20).unwrap().viewers.len()), (1, 0));
        assert!(l.adopt(1, ()).is_err() && l.adopt(20, ()).is_err());
    }

    #[test]
    fn link_order_survives_removals() {
        let mut l = net();
        for (i, name) in [b"a", b"b", b"c", b"d"].iter().enumerate() {
            l.link(1, *name, 10 + i, None, 'e').unwrap();
        }
        l.unlink(11).unwrap();
        assert_eq!(l.entries_of(1).unwrap(), [10, 12, 13]);
        assert_eq!(l.take_all().0.iter().map(|(k, _)| *k).collect::<Vec<_>>(), [10, 12, 13]);
    }

    #[test]
    fn a_gradient_buffer_given_as_data_is_refused_not_viewed() {
        let mut l = net();
        l.link(1, b"o", 10, Some([own(0x100), own(0x200)]), 'o').unwrap();
        let e = l.link(2, b"w", 11, Some([own(0x200), NONE]), 'w').unwrap_err();
        assert!(e.message().contains("data buffer (0x200) is owned by entry \"o\""), "{}", e.message());
        assert!(l.entry(10).unwrap().viewers.is_empty());
    }

    #[test]
    fn a_view_may_own_a_gradient_of_its_own() {
        let mut l = net();
        l.link(1, b"a", 20, Some([own(0x100), own(0x200)]), 'a').unwrap();
        l.link(2, b"a.in", 21, Some([own(0x100), own(0x300)]), 'v').unwrap();
        assert_eq!(l.entry(21).unwrap().owned, OWNS_DIFF);
        let gone = l.unlink(20).unwrap();
        assert_eq!(gone.iter().map(|(k, e)| (*k, e.owned)).collect::<Vec<_>>(), [(21, OWNS_DIFF), (20, 3)]);
    }

    #[test]
    fn taking_all_gives_views_first_and_absorbing_joins_two_nets() {
        let mut a = net();
        let mut b: Linked<char, ()> = Linked::default();
        b.adopt(7, ()).unwrap();
        b.link(7, b"x", 70, Some([NONE, own(0x30)]), 'x').unwrap();
        a.link(1, b"out", 10, Some([own(0x100), NONE]), 'o').unwrap();
        a.absorb(&mut b);
        assert!(b.is_empty() && b.lists().next().is_none());
        a.link(7, b"in", 71, Some([own(0x100), NONE]), 'i').unwrap();
        assert_eq!(a.entries_of(7).unwrap(), [70, 71]);
        let (entries, lists) = a.take_all();
        assert_eq!(entries.iter().map(|(k, _)| *k).collect::<Vec<_>>(), [71, 70, 10]);
        assert_eq!(lists.iter().map(|(h, _)| *h).collect::<Vec<_>>(), [1, 2, 3, 7]);
        assert!(a.is_empty() && a.spent());
    }
}
