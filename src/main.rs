fn main() {
    println!("dynosim");
}
