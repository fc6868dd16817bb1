use landscaper_templating::gotemplate::funcs::crypto::generate_private_key;
#[test]
fn t() {
    for k in ["rsa", "ecdsa", "ed25519", "dsa"] {
        let t = std::time::Instant::now();
        let p = generate_private_key(k);
        println!("{k}: {:?} {}", t.elapsed(), p.lines().next().unwrap());
    }
}
