//! Function calls: builtins, intrinsics (`defined`, `valid`, `stub`, ...) and lambda calls.

use std::rc::Rc;

use super::env::Env;
use super::eval::{Info, Res, call_lambda, eval, resolve, resolve_list};
use super::expr::{Expr, Param};
use super::parser::path_components;
use super::value::{LambdaValue, Map, Node, Value};

fn unresolved(e: &Rc<Expr>, info: Info) -> Res {
    (Value::Expr(e.clone()), info, true)
}

pub(crate) fn eval_call(
    e: &Rc<Expr>,
    func: &Rc<Expr>,
    args: &[Rc<Expr>],
    curry: bool,
    env: &Env,
    locally: bool,
) -> Res {
    let mut resolved = true;
    let mut func_name = "";
    let mut fvalue = Value::Nil;
    let mut info = Info::default();
    match &**func {
        Expr::Reference { tag, path }
            if tag.is_empty() && path.len() == 1 && !path[0].is_empty() && path[0] != "_" =>
        {
            func_name = path[0].as_str();
        }
        _ => {
            let (v, i, okf) = resolve(func, &mut resolved, Some(&info), env, false);
            info = i;
            if !okf {
                return (Value::Nil, info, false);
            }
            if resolved && !matches!(v, Value::Lambda(_)) {
                return info.error(format!(
                    "function call '{func}' requires function name or lambda value"
                ));
            }
            fvalue = v;
        }
    }

    // intrinsics
    match func_name {
        "defined" | "optional" | "require" | "valid" | "stub" | "catch" | "sync" => {
            if curry {
                return info.error(format!(
                    "no currying for intrinsic builtin function ({func})"
                ));
            }
            return match func_name {
                "defined" => intrinsic_defined(e, args, env),
                "valid" => intrinsic_valid(e, args, env),
                "optional" => intrinsic_optional(e, args, env),
                "require" => intrinsic_require(e, args, env),
                "stub" => intrinsic_stub(e, args, env),
                "catch" => {
                    if args.len() != 1 {
                        return info.error("catch requires a single argument");
                    }
                    // like spiff, the call yields the catch expression, evaluated in the next pass
                    let c = Rc::new(Expr::Catch {
                        a: args[0].clone(),
                        lambda: None,
                    });
                    (Value::Expr(c), info, true)
                }
                _ => info.error("sync is not supported"),
            };
        }
        _ => {}
    }

    let (values, ainfo, okk) = resolve_list(args, &mut resolved, env, false);
    if !okk {
        return (Value::Nil, ainfo, false);
    }
    let mut info = info.join(&ainfo);
    if !resolved {
        let mut pairs: Vec<(&Rc<Expr>, &Value)> = args.iter().zip(values.iter()).collect();
        pairs.push((func, &fvalue));
        return unresolved(&super::eval::pushed(e, &pairs), info);
    }
    let mut values = values;
    let mut named = Map::new();
    let mut found: Option<usize> = None;
    for (i, a) in args.iter().enumerate() {
        if let Expr::NameArg { name, .. } = &**a {
            named.insert(name.clone(), Node::new(values[i].clone()));
            found = Some(i);
        } else {
            break;
        }
    }
    if let Some(f) = found {
        values.drain(..=f);
    }
    if !func_name.is_empty() && !named.is_empty() {
        return info.error(format!("no named arguments for builtin function ({func})"));
    }
    if !func_name.is_empty() && curry {
        let params = vec![Param {
            name: "__args".into(),
            default: None,
        }];
        let mut cargs: Vec<Rc<Expr>> = values
            .into_iter()
            .map(|v| Rc::new(Expr::Value(v)))
            .collect();
        cargs.push(Rc::new(Expr::ListExpansion(Rc::new(Expr::Reference {
            tag: String::new(),
            path: vec!["__args".into()],
        }))));
        let body = Rc::new(Expr::Call {
            func: Rc::new(Expr::Reference {
                tag: String::new(),
                path: vec![func_name.to_string()],
            }),
            args: cargs,
            curry: false,
        });
        let lv = LambdaValue {
            params,
            varargs: true,
            body,
            static_: Rc::new(Map::new()),
            resolver: Some(env.clone()),
        };
        return super::eval::ok(Value::Lambda(Rc::new(lv)));
    }

    if func_name.is_empty() {
        let Value::Lambda(lv) = &fvalue else {
            return info.error("no lambda");
        };
        let (res, result, sub, okk) =
            call_lambda(lv, false, curry, true, &named, values, env, false);
        if okk && (!res || result.is_expr()) {
            return unresolved(e, sub.join(&info));
        }
        return (result, sub.join(&info), okk);
    }

    if func_name == "type" && info.undefined {
        info.undefined = false;
        return (Value::str("undef"), info, true);
    }

    if func_name == "list_to_map" {
        // the key name of the list comes from the annotation of the referenced list
        let (_, li, _) = eval(&args[0], env, false);
        let key = li.key_name.clone();
        let (result, sub, okk, _) = super::functions::list_to_map(&values, key.as_deref());
        return (result, sub.join(&info), okk);
    }
    let (result, sub, okk, res) = super::functions::call_builtin(func_name, values, env, locally);
    if okk && let Err(e) = super::eval::check_new(&result) {
        return Info::default().error(e.to_string());
    }
    if okk && (!res || result.is_expr()) {
        return unresolved(e, sub.join(&info));
    }
    (result, sub.join(&info), okk)
}

fn intrinsic_valid(e: &Rc<Expr>, args: &[Rc<Expr>], env: &Env) -> Res {
    let mut resolved = true;
    let mut valid = true;
    let mut okk = true;
    for a in args {
        let (v, _, o) = resolve(a, &mut resolved, None, env, true);
        okk = o;
        if resolved && !o {
            return super::eval::ok(Value::Bool(false));
        }
        valid = valid && !v.is_nil();
    }
    if !resolved {
        return unresolved(e, Info::default());
    }
    (Value::Bool(valid), Info::default(), okk)
}

fn intrinsic_defined(e: &Rc<Expr>, args: &[Rc<Expr>], env: &Env) -> Res {
    let mut resolved = true;
    let mut okk = true;
    for a in args {
        let (_, info, o) = resolve(a, &mut resolved, None, env, true);
        okk = o;
        if resolved {
            if !o {
                return super::eval::ok(Value::Bool(false));
            }
            if info.undefined {
                return super::eval::ok(Value::Bool(false));
            }
        }
    }
    if !resolved {
        return unresolved(e, Info::default());
    }
    (Value::Bool(true), Info::default(), okk)
}

fn intrinsic_optional(e: &Rc<Expr>, args: &[Rc<Expr>], env: &Env) -> Res {
    let info = Info::default();
    if args.len() != 2 {
        return info.error("condition and template required for optional()");
    }
    let mut resolved = true;
    let (a, info, okk) = resolve(&args[0], &mut resolved, Some(&info), env, false);
    if !resolved {
        return unresolved(e, info);
    }
    if !okk || info.undefined || !super::value::to_bool(&a) {
        let i = Info {
            undefined: true,
            ..Default::default()
        };
        return (Value::Nil, i, true);
    }
    let (r, iv, okk) = eval(&args[1], env, false);
    (r, iv.join(&info), okk)
}

fn intrinsic_require(e: &Rc<Expr>, args: &[Rc<Expr>], env: &Env) -> Res {
    let info = Info::default();
    if args.len() != 1 {
        return info.error("one argument expected for 'require'");
    }
    let mut resolved = true;
    let (v, _, okk) = resolve(&args[0], &mut resolved, None, env, true);
    if !resolved {
        return unresolved(e, info);
    }
    if !okk || v.is_nil() {
        return info.error(format!(
            "required expression {} undefined",
            super::expr::go_quote(&args[0].to_string())
        ));
    }
    (v, info, true)
}

fn intrinsic_stub(e: &Rc<Expr>, args: &[Rc<Expr>], env: &Env) -> Res {
    let info = Info::default();
    let arg: Vec<String> = match args.len() {
        0 => env.path().to_vec(),
        1 => match &*args[0] {
            Expr::Reference { path, .. } => path.clone(),
            _ => {
                let mut resolved = true;
                let (v, info, okk) = resolve(&args[0], &mut resolved, None, env, true);
                if !resolved {
                    return unresolved(e, info);
                }
                if !okk {
                    return (v, info, okk);
                }
                match v {
                    Value::Str(s) => path_components(&s, true),
                    Value::List(l) => {
                        let mut out = Vec::new();
                        for n in l.iter() {
                            match n.value() {
                                Value::Str(s) => out.push(s.to_string()),
                                _ => {
                                    return info.error("stub() requires a string entries in list");
                                }
                            }
                        }
                        out
                    }
                    _ => {
                        if !info.undefined {
                            return info.error("stub() requires a string or reference argument");
                        }
                        env.path().to_vec()
                    }
                }
            }
        },
        _ => return info.error("a maximum of one argument expected for 'stub'"),
    };
    match env.find_in_stubs(&arg) {
        Some(n) => (n.value().clone(), info, true),
        None => info.error(format!("'{}' not found in any stub", arg.join("."))),
    }
}
