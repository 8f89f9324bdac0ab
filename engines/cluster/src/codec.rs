//! The wire form of what rank 0 broadcasts: batches of instructions, extension announcements and
//! the end of the session. Native byte order (all ranks of a job run one binary).

use vm_ir::{Base, BaseId, DType, Error, Instruction, Opcode, Operand, Result, Scalar, View};

/// What rank 0 tells the other ranks.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Execute a (validated) batch.
    Batch(Vec<Instruction>),
    /// Announce an extension method to the child stacks.
    Register(String, Opcode),
    /// The session ends: report statistics and wait for the next session (or the end of the job).
    Shutdown,
    /// Rank 0's process is exiting: the job ends, every rank shuts its stack down and exits.
    Exit,
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, x: u8) {
        self.0.push(x);
    }
    fn u64(&mut self, x: u64) {
        self.0.extend_from_slice(&x.to_ne_bytes());
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if self.0.len() < n {
            return Err(Error::Internal("cluster: truncated command".into()));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_ne_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
}

/// Encodes a command.
pub fn encode(cmd: &Command) -> Vec<u8> {
    let mut w = Writer(Vec::new());
    match cmd {
        Command::Batch(batch) => {
            w.u8(0);
            w.u64(batch.len() as u64);
            for i in batch {
                w.u64(u64::from(i.opcode.id()));
                w.u8(i.operands.len() as u8);
                for op in &i.operands {
                    match op {
                        Operand::View(v) => {
                            w.u8(0);
                            w.u64(v.base.id.0);
                            w.u8(v.base.dtype.id() as u8);
                            w.u64(v.base.nelem);
                            w.u64(v.start as u64);
                            w.u8(v.ndim() as u8);
                            for (&n, &s) in v.shape.iter().zip(&v.stride) {
                                w.u64(n as u64);
                                w.u64(s as u64);
                            }
                        }
                        Operand::Const(c) => {
                            w.u8(1);
                            w.u8(c.dtype().id() as u8);
                            w.u64(c.to_payload());
                        }
                    }
                }
            }
        }
        Command::Register(name, op) => {
            w.u8(1);
            w.u64(u64::from(op.id()));
            w.u64(name.len() as u64);
            w.0.extend_from_slice(name.as_bytes());
        }
        Command::Shutdown => w.u8(2),
        Command::Exit => w.u8(3),
    }
    w.0
}

/// Decodes a command encoded by [`encode`].
pub fn decode(bytes: &[u8]) -> Result<Command> {
    let mut r = Reader(bytes);
    match r.u8()? {
        0 => {
            let n = r.u64()? as usize;
            let mut batch = Vec::with_capacity(n.min(1 << 20));
            for _ in 0..n {
                let opcode = Opcode::from_id(r.u64()? as u32)?;
                let nops = r.u8()?;
                let mut operands = Vec::with_capacity(nops as usize);
                for _ in 0..nops {
                    operands.push(match r.u8()? {
                        0 => {
                            let id = BaseId(r.u64()?);
                            let dtype = DType::from_id(u32::from(r.u8()?))?;
                            let base = Base { id, dtype, nelem: r.u64()? };
                            let start = r.u64()? as i64;
                            let nd = r.u8()? as usize;
                            let (mut shape, mut stride) = (Vec::new(), Vec::new());
                            for _ in 0..nd {
                                shape.push(r.u64()? as usize);
                                stride.push(r.u64()? as i64);
                            }
                            let v = View {
                                base,
                                start,
                                shape: shape.into_iter().collect(),
                                stride: stride.into_iter().collect(),
                            };
                            Operand::View(v)
                        }
                        _ => {
                            let dtype = DType::from_id(u32::from(r.u8()?))?;
                            Operand::Const(Scalar::from_payload(dtype, r.u64()?))
                        }
                    });
                }
                batch.push(Instruction::new(opcode, operands));
            }
            Ok(Command::Batch(batch))
        }
        1 => {
            let op = Opcode::from_id(r.u64()? as u32)?;
            let len = r.u64()? as usize;
            let name = String::from_utf8(r.take(len)?.to_vec())
                .map_err(|_| Error::Internal("cluster: extension name is not UTF-8".into()))?;
            Ok(Command::Register(name, op))
        }
        2 => Ok(Command::Shutdown),
        3 => Ok(Command::Exit),
        t => Err(Error::Internal(format!("cluster: unknown command tag {t}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip() {
        let b = Base { id: BaseId(7), dtype: DType::F32, nelem: 30 };
        let v = View::new(b, 29, &[3, 2], &[-10, 0]).unwrap();
        let i = Instruction::new(Opcode::Add, [v.clone().into(), v.into(), Scalar::F32(-1.5).into()]);
        let r =
            Instruction::new(Opcode::Random, [View::of_base(b).into(), Scalar::U64(3).into(), Scalar::U64(9).into()]);
        let s = Instruction::new(Opcode::AddReduce, [View::of_base(b).into(), Scalar::I64(0).into()]);
        for cmd in [
            Command::Batch(vec![i, r, s]),
            Command::Batch(vec![]),
            Command::Register("matmul".into(), Opcode::Extension(2)),
            Command::Shutdown,
            Command::Exit,
        ] {
            assert_eq!(decode(&encode(&cmd)).unwrap(), cmd);
        }
        assert!(decode(&[0, 1]).is_err());
    }
}
