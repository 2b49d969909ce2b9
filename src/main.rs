fn main() {
    std::process::exit(headscope::cli::main());
}
