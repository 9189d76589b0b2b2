//! Which types reach a wanted type (a future, a lock guard) through what they own, at any
//! depth, each worked out once per command: what lets a search through a value's fields
//! skip, before reading anything, the fields that cannot lead to what it looks for.

use rustc_hash::FxHashMap;

/// A type as a search through what values own sees it.
pub enum TypeShape<T> {
    /// What the search looks for.
    Wanted,
    /// What a value of it owns: its fields and variants, a Box's pointee, a Vec's element.
    Owns(Vec<T>),
}

/// Which types reach a wanted type through what they own, at any depth, each worked out
/// once. Types that own each other (through Boxes, Vecs) reach the same types, so the answer
/// is found per strongly connected set of types (Tarjan's algorithm), which is exact where
/// assuming "no" for a type met again while open is not.
pub struct TypeGraphSearch<T> {
    known: FxHashMap<T, bool>,
    /// Types on the current search path or in a set not yet closed: their order of
    /// discovery, the lowest order they reach, and whether they reach a wanted type so far.
    open: FxHashMap<T, OpenType>,
    stack: Vec<T>,
}

struct OpenType {
    order: usize,
    lowest_reached: usize,
    holds: bool,
}

/// How far a search may nest: only corrupt DWARF nests types this deep, and what lies
/// below counts as reaching nothing.
const MAX_TYPE_NESTING: usize = 512;

impl<T> Default for TypeGraphSearch<T> {
    fn default() -> Self {
        TypeGraphSearch {
            known: FxHashMap::default(),
            open: FxHashMap::default(),
            stack: Vec::new(),
        }
    }
}

impl<T: Copy + Eq + std::hash::Hash> TypeGraphSearch<T> {
    /// Whether `ty` is wanted or owns, at any depth, a value of a wanted type.
    pub fn reaches(&mut self, ty: T, shape: &mut impl FnMut(T) -> TypeShape<T>) -> bool {
        if let Some(&known) = self.known.get(&ty) {
            return known;
        }
        self.visit(ty, 0, shape);
        self.open.clear();
        self.known.get(&ty).copied().unwrap_or(false)
    }

    fn visit(&mut self, ty: T, nesting: usize, shape: &mut impl FnMut(T) -> TypeShape<T>) {
        let order = self.open.len();
        let owned = match shape(ty) {
            TypeShape::Wanted => {
                self.known.insert(ty, true);
                return;
            }
            TypeShape::Owns(owned) => owned,
        };
        self.open.insert(
            ty,
            OpenType {
                order,
                lowest_reached: order,
                holds: false,
            },
        );
        self.stack.push(ty);
        for member in owned {
            let reached = match self.known.get(&member) {
                Some(&holds) => (holds, None),
                None if !self.open.contains_key(&member) && nesting < MAX_TYPE_NESTING => {
                    self.visit(member, nesting + 1, shape);
                    match self.known.get(&member) {
                        Some(&holds) => (holds, None),
                        None => (
                            false,
                            self.open.get(&member).map(|open| open.lowest_reached),
                        ),
                    }
                }
                // Open: in the set being worked out, which decides for all its types at once.
                None => (false, self.open.get(&member).map(|open| open.order)),
            };
            if let Some(this) = self.open.get_mut(&ty) {
                this.holds |= reached.0;
                this.lowest_reached = this.lowest_reached.min(reached.1.unwrap_or(usize::MAX));
            }
        }
        // The first type of a set closes it: the set is it and what lies above it on the stack.
        let closes = self
            .open
            .get(&ty)
            .is_some_and(|this| this.lowest_reached == this.order);
        if let Some(start) = self
            .stack
            .iter()
            .rposition(|open| *open == ty)
            .filter(|_| closes)
        {
            let set: Vec<T> = self.stack.drain(start..).collect();
            let holds = set
                .iter()
                .any(|member| self.open.get(member).is_some_and(|open| open.holds));
            for member in set {
                self.known.insert(member, holds);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{TypeGraphSearch, TypeShape, MAX_TYPE_NESTING};

    /// Types as numbers: `0` is wanted (a guard); each other type owns the types listed for it.
    fn graph<'a>(owns: &'a [(u32, Vec<u32>)]) -> impl FnMut(u32) -> TypeShape<u32> + 'a {
        move |ty| match owns.iter().find(|(owner, _)| *owner == ty) {
            _ if ty == 0 => TypeShape::Wanted,
            Some((_, owned)) => TypeShape::Owns(owned.clone()),
            None => TypeShape::Owns(Vec::new()),
        }
    }

    fn chain(length: u32) -> Vec<(u32, Vec<u32>)> {
        (1..=length)
            .map(|ty| (ty, vec![if ty == length { 0 } else { ty + 1 }]))
            .collect()
    }

    #[test]
    fn types_that_own_each_other_share_their_answer() {
        // 1 { x: 2, guard }, 2 { Box<1> } (3 is the Box): 2 reaches the guard through 1.
        let owns = [(1, vec![2, 0]), (2, vec![3]), (3, vec![1])];
        let mut search = TypeGraphSearch::default();
        assert!(search.reaches(1, &mut graph(&owns)));
        assert!(search.reaches(2, &mut graph(&owns)));
        assert!(search.reaches(3, &mut graph(&owns)));
        // The same with the guard found last, from the Box's side.
        let owns = [
            (1, vec![2]),
            (2, vec![3, 4]),
            (3, vec![1]),
            (4, vec![5]),
            (5, vec![0]),
        ];
        let mut search = TypeGraphSearch::default();
        assert!(search.reaches(3, &mut graph(&owns)));
        assert!(search.reaches(1, &mut graph(&owns)));
    }

    #[test]
    fn the_answer_for_a_type_does_not_depend_on_where_it_was_first_met() {
        // A chain 1 -> 2 -> ... -> 20 -> guard, asked from its top and then from inside.
        let owns = chain(20);
        let mut search = TypeGraphSearch::default();
        assert!(search.reaches(1, &mut graph(&owns)));
        assert!(search.reaches(15, &mut graph(&owns)));
        // Too deep for a search to follow: only corrupt DWARF nests types so far.
        let owns = chain(MAX_TYPE_NESTING as u32 + 10);
        assert!(!TypeGraphSearch::default().reaches(1, &mut graph(&owns)));
    }

    #[test]
    fn every_type_is_worked_out_once() {
        // 30 types that each own all the others, and a list node { next: Box<Node>, value }.
        let everyone: Vec<(u32, Vec<u32>)> = (1..=30)
            .map(|ty| (ty, (1..=30).filter(|other| *other != ty).collect()))
            .collect();
        let node = [(41, vec![42, 44]), (42, vec![41])];
        for (owns, types) in [(&everyone[..], 30), (&node[..], 3)] {
            let mut search = TypeGraphSearch::default();
            let mut asked = 0;
            let mut counting = |ty| {
                asked += 1;
                graph(owns)(ty)
            };
            assert!(!search.reaches(owns[0].0, &mut counting));
            assert!(owns
                .iter()
                .all(|(ty, _)| !search.reaches(*ty, &mut counting)));
            assert_eq!(asked, types);
        }
    }
}
