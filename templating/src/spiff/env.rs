//! The evaluation environment (spiff's `Binding`/`DefaultEnvironment`): scopes for reference
//! resolution, the current path, the stubs and the shared processing state.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::{Rc, Weak};

use super::value::{DOCNODE, Map, Node, ROOT, SELF, Value, find_r};

/// Tag information (`&tag:name`).
#[derive(Clone)]
pub(crate) struct TagInfo {
    pub name: String,
    pub node: Node,
    pub path: Option<Vec<String>>,
    pub local: bool,
    pub stream: bool,
}

impl TagInfo {
    pub fn level(&self) -> usize {
        self.name.split('.').count()
    }
}

/// State shared by all environments of one evaluation.
pub(crate) struct State {
    pub interpolation: bool,
    pub control: bool,
    #[allow(dead_code)]
    pub os_access: bool,
    pub files: Rc<BTreeMap<String, Vec<u8>>>,
    pub functions: super::SpiffFunctions,
    pub tags: RefCell<BTreeMap<String, TagInfo>>,
    pub docno: Cell<i64>,
    pub steps: Cell<u64>,
    pub max_steps: u64,
    pub depth: Cell<usize>,
    pub max_depth: usize,
    pub limit_hit: Cell<bool>,
    /// scopes whose contents were updated after a pass (their cycles are broken at the end)
    pub updated_scopes: RefCell<Vec<Weak<Scope>>>,
}

impl State {
    /// Breaks the reference cycles of an evaluation (scopes updated to documents holding
    /// lambdas/templates that refer to these scopes, tags holding such values).
    pub fn cleanup(&self) {
        self.tags.borrow_mut().clear();
        for s in self.updated_scopes.borrow_mut().drain(..) {
            if let Some(s) = s.upgrade() {
                s.local.replace(None);
            }
        }
    }
}

pub(crate) enum RootRef {
    Own,
    Of(Rc<Scope>),
    Nil,
}

/// One scope level.
pub(crate) struct Scope {
    pub list: Option<Rc<Vec<Node>>>,
    pub local: RefCell<Option<Rc<Map>>>,
    pub path: Option<Rc<Vec<String>>>,
    pub next: Option<Rc<Scope>>,
    pub root: RootRef,
}

impl Scope {
    fn new(outer: Option<&Rc<Scope>>, path: Option<Rc<Vec<String>>>, local: Rc<Map>) -> Scope {
        let root = match outer {
            None => RootRef::Own,
            Some(o) => match &o.root {
                RootRef::Nil => RootRef::Own,
                RootRef::Own => RootRef::Of(o.clone()),
                RootRef::Of(r) => RootRef::Of(r.clone()),
            },
        };
        Scope {
            list: None,
            local: RefCell::new(Some(local)),
            path,
            next: outer.cloned(),
            root,
        }
    }

    fn root_of(self: &Rc<Scope>) -> Option<Rc<Scope>> {
        match &self.root {
            RootRef::Own => Some(self.clone()),
            RootRef::Of(r) => Some(r.clone()),
            RootRef::Nil => None,
        }
    }

    pub fn local(&self) -> Option<Rc<Map>> {
        self.local.borrow().clone()
    }
}

#[derive(Clone)]
pub(crate) struct EnvData {
    pub state: Rc<State>,
    pub scope: Option<Rc<Scope>>,
    /// `None` is Go's nil path (the document root), distinct from an empty path
    pub path: Option<Rc<Vec<String>>>,
    pub stub_path: Option<Rc<Vec<String>>>,
    pub stubs: Rc<Vec<Node>>,
    pub nomerge: bool,
    pub static_: Rc<Map>,
    pub outer: Option<Env>,
    pub active: Cell<bool>,
    /// the values environment (`WithValues`)
    pub binding: bool,
    /// no stub can contribute anything (no stubs, or only empty ones)
    pub trivial_stubs: bool,
}

fn trivial(stubs: &[Node]) -> bool {
    stubs.iter().all(|s| match s.value() {
        Value::Nil => true,
        Value::Map(m) => m.is_empty() && s.flags().0 == 0,
        Value::List(l) => l.is_empty() && s.flags().0 == 0,
        _ => false,
    })
}

/// An environment; cheap to clone.
#[derive(Clone)]
pub(crate) struct Env(pub Rc<EnvData>);

static EMPTY: Vec<String> = Vec::new();

impl Env {
    pub fn new_root(state: Rc<State>, stubs: Vec<Node>, binding: bool) -> Env {
        let trivial_stubs = trivial(&stubs);
        Env(Rc::new(EnvData {
            trivial_stubs,
            state,
            scope: None,
            path: None,
            stub_path: None,
            stubs: Rc::new(stubs),
            nomerge: false,
            static_: Rc::new(Map::new()),
            outer: None,
            active: Cell::new(true),
            binding,
        }))
    }

    /// `NewNestedEnvironment`
    pub fn nested(outer: &Env, stubs: Vec<Node>) -> Env {
        let trivial_stubs = trivial(&stubs);
        Env(Rc::new(EnvData {
            trivial_stubs,
            state: outer.0.state.clone(),
            scope: None,
            path: None,
            stub_path: None,
            stubs: Rc::new(stubs),
            nomerge: false,
            static_: Rc::new(Map::new()),
            outer: Some(outer.clone()),
            active: Cell::new(true),
            binding: false,
        }))
    }

    pub fn ptr_eq(&self, o: &Env) -> bool {
        Rc::ptr_eq(&self.0, &o.0)
    }

    fn derive(&self, f: impl FnOnce(&mut EnvData)) -> Env {
        let mut d = (*self.0).clone();
        f(&mut d);
        Env(Rc::new(d))
    }

    pub fn state(&self) -> &Rc<State> {
        &self.0.state
    }
    pub fn control(&self) -> bool {
        self.0.state.control
    }
    pub fn interpolation(&self) -> bool {
        self.0.state.interpolation
    }
    pub fn path(&self) -> &[String] {
        self.0
            .path
            .as_deref()
            .map(|v| v.as_slice())
            .unwrap_or(&EMPTY)
    }
    pub fn stub_path(&self) -> &[String] {
        self.0
            .stub_path
            .as_deref()
            .map(|v| v.as_slice())
            .unwrap_or(&EMPTY)
    }
    pub fn nomerge(&self) -> bool {
        self.0.nomerge
    }
    pub fn outer(&self) -> Option<&Env> {
        self.0.outer.as_ref()
    }
    pub fn static_binding(&self) -> &Rc<Map> {
        &self.0.static_
    }
    pub fn active(&self) -> bool {
        self.0.active.get()
    }
    pub fn deactivate(&self) {
        self.0.active.set(false)
    }
    pub fn scope(&self) -> Option<&Rc<Scope>> {
        self.0.scope.as_ref()
    }

    pub fn root_binding(&self) -> Option<Rc<Map>> {
        let s = self.0.scope.as_ref()?;
        s.root_of()?.local()
    }

    pub fn with_scope(&self, step: Rc<Map>) -> Env {
        let scope = Scope::new(self.0.scope.as_ref(), self.0.path.clone(), step);
        self.derive(|d| d.scope = Some(Rc::new(scope)))
    }

    pub fn with_list_scope(&self, step: Rc<Vec<Node>>) -> Env {
        let outer = self.0.scope.as_ref();
        let mut scope = Scope::new(outer, self.0.path.clone(), Rc::new(Map::new()));
        scope.list = Some(step);
        match outer {
            Some(o) if !matches!(o.root, RootRef::Nil) => {
                scope.local = RefCell::new(o.local());
            }
            _ => {
                scope.local = RefCell::new(None);
            }
        }
        self.derive(|d| d.scope = Some(Rc::new(scope)))
    }

    pub fn with_new_root(&self) -> Env {
        let mut scope = Scope::new(
            self.0.scope.as_ref(),
            self.0.path.clone(),
            Rc::new(Map::new()),
        );
        scope.root = RootRef::Nil;
        self.derive(|d| d.scope = Some(Rc::new(scope)))
    }

    pub fn with_local_scope(&self, step: Map) -> Env {
        let step = Rc::new(step);
        let mut st = (*self.0.static_).clone();
        for (k, v) in step.iter() {
            st.insert(k.clone(), v.clone());
        }
        let scope = Scope::new(self.0.scope.as_ref(), None, step);
        self.derive(|d| {
            d.static_ = Rc::new(st);
            d.scope = Some(Rc::new(scope));
        })
    }

    pub fn with_path(&self, step: &str) -> Env {
        let mut p = self.path().to_vec();
        p.push(step.to_string());
        let mut sp = self.stub_path().to_vec();
        sp.push(step.to_string());
        self.derive(|d| {
            d.path = Some(Rc::new(p));
            d.stub_path = Some(Rc::new(sp));
        })
    }

    pub fn redirect_overwrite(&self, path: &Rc<Vec<String>>) -> Env {
        if !path.is_empty() {
            let p = path.clone();
            self.derive(|d| {
                d.stub_path = Some(p);
                d.nomerge = false;
            })
        } else {
            self.derive(|d| d.nomerge = true)
        }
    }

    /// `FindInStubs`
    pub fn find_in_stubs(&self, path: &[String]) -> Option<Node> {
        let control = self.control();
        for stub in self.0.stubs.iter() {
            if let Some(v) = find_r(false, stub, control, path)
                && !v.flags().implied()
            {
                return Some(v);
            }
        }
        None
    }

    /// Whether settled nodes can be skipped: no stub can contribute and no string
    /// interpolation is active.
    pub fn trivial_stubs(&self) -> bool {
        self.0.trivial_stubs && !self.0.state.interpolation
    }

    pub fn has_stubs(&self) -> bool {
        !self.0.stubs.is_empty()
    }

    /// `FindFromRoot`
    pub fn find_from_root(&self, path: &[String]) -> Option<Node> {
        let scope = self.0.scope.as_ref()?;
        let root = scope.root_of()?;
        let control = self.control();
        if let Some(list) = &root.list {
            if path.is_empty() {
                return Some(Node::new(Value::List(list.clone())));
            }
            if path[0] == "__map" {
                let mut found = None;
                let mut s = Some(scope.clone());
                while let Some(sc) = s {
                    if let Some(l) = sc.local() {
                        found = Some(l);
                    }
                    s = sc.next.clone();
                }
                let n = Node::new(match found {
                    Some(m) => Value::Map(m),
                    None => Value::Nil,
                });
                return find_r(true, &n, control, &path[1..]);
            }
            return find_r(true, &Node::new(Value::List(list.clone())), control, path);
        }
        let n = Node::new(match root.local() {
            Some(m) => Value::Map(m),
            None => Value::Nil,
        });
        find_r(true, &n, control, path)
    }

    fn find_in_scopes(&self, nodescope: &Rc<Scope>, path: &[String]) -> Option<Node> {
        let control = self.control();
        if !path.is_empty() {
            let mut scope = Some(nodescope.clone());
            while let Some(s) = scope {
                let Some(local) = s.local() else { break };
                if let Some(val) = local.get(&path[0]) {
                    return find_r(true, val, control, &path[1..]);
                }
                scope = s.next.clone();
            }
            return None;
        }
        let n = Node::new(match nodescope.local() {
            Some(m) => Value::Map(m),
            None => Value::Nil,
        });
        find_r(true, &n, control, path)
    }

    /// `FindReference`
    pub fn find_reference(&self, path: &[String]) -> Option<Node> {
        let control = self.control();
        let (root, nodescope) = self.resolve_symbol(&path[0]);
        let Some(root) = root else {
            if path[0] == ROOT {
                let mut outer = self.clone();
                while let Some(o) = outer.outer() {
                    outer = o.clone();
                }
                let n = Node::new(match outer.root_binding() {
                    Some(m) => Value::Map(m),
                    None => Value::Nil,
                });
                return find_r(true, &n, control, &path[1..]);
            }
            if path[0] == DOCNODE
                && let Some(ns) = &nodescope
            {
                return self.find_in_scopes(ns, &path[1..]);
            }
            if let Some(o) = self.outer() {
                return o.find_reference(path);
            }
            return None;
        };
        if path.len() > 1 && path[0] == SELF {
            if let Some(r) = root.resolver() {
                return r.find_reference(&path[1..]);
            }
            return None;
        }
        find_r(true, &root, control, &path[1..])
    }

    fn resolve_symbol(&self, name: &str) -> (Option<Node>, Option<Rc<Scope>>) {
        if name == "__ctx" {
            return (Some(self.create_context()), None);
        }
        let mut nodescope: Option<Rc<Scope>> = None;
        let mut scope = self.0.scope.clone();
        while let Some(s) = scope {
            let local = s.local();
            if nodescope.is_none() && s.path.is_some() && local.is_some() {
                nodescope = Some(s.clone());
            }
            if let Some(l) = &local
                && let Some(v) = l.get(name)
            {
                return (Some(v.clone()), None);
            }
            scope = s.next.clone();
        }
        (None, nodescope)
    }

    fn create_context(&self) -> Node {
        let mut ctx = Map::new();
        let s = |v: &str| Node::new(Value::str(v));
        ctx.insert("VERSION".into(), s(super::SPIFF_VERSION));
        ctx.insert("FILE".into(), s("template"));
        ctx.insert("DIR".into(), s("."));
        ctx.insert("RESOLVED_FILE".into(), s("template"));
        ctx.insert("RESOLVED_DIR".into(), s("."));
        ctx.insert("PATHNAME".into(), s(&self.path().join(".")));
        let list = |p: &[String]| {
            Node::new(Value::list(
                p.iter()
                    .map(|x| Node::new(Value::str(x.as_str())))
                    .collect(),
            ))
        };
        ctx.insert("PATH".into(), list(self.path()));
        ctx.insert("STUBPATH".into(), list(self.stub_path()));
        // outer bindings
        let mut outers = Vec::new();
        let mut bindings: Option<Env> = None;
        let mut o = self.outer().cloned();
        while let Some(e) = o {
            if e.0.binding {
                bindings = Some(e.clone());
            }
            if let Some(b) = e.root_binding() {
                outers.push(Node::new(Value::Map(b)));
            }
            o = e.outer().cloned();
        }
        if !outers.is_empty() {
            ctx.insert("OUTER".into(), Node::new(Value::list(outers)));
        }
        let b = match bindings.and_then(|b| b.root_binding()) {
            Some(m) => Node::new(Value::Map(m)),
            None => Node::new(Value::list(Vec::new())),
        };
        ctx.insert("BINDINGS".into(), b);
        Node::new(Value::map(ctx))
    }
}
