/**
 * A hand-assembled contract for client tests (no compiler needed):
 *   ping(uint256 v)  -> emits Ping(uint256 value) with v as data (any 36-byte calldata)
 *   fail()           -> reverts with Error("nope") (any other calldata)
 */
import { id } from 'ethers';

export const PING_ABI = ['function ping(uint256 v)', 'function fail() view', 'event Ping(uint256 value)'];

/** abi.encodeWithSignature("Error(string)", "nope") */
export const NOPE_REVERT_DATA =
  '0x08c379a0' +
  '0000000000000000000000000000000000000000000000000000000000000020' +
  '0000000000000000000000000000000000000000000000000000000000000004' +
  '6e6f706500000000000000000000000000000000000000000000000000000000';

export function pingBytecode(): string {
  const topic = id('Ping(uint256)').slice(2);
  const revertData = NOPE_REVERT_DATA.slice(2);
  const runtime =
    '36' + '6024' + '14' + '6013' + '57' + // CALLDATASIZE == 36 ? jump emit
    '6064' + '6042' + '6000' + '39' + // CODECOPY(0, 0x42, 100): the revert data
    '6064' + '6000' + 'fd' + // REVERT(0, 100)
    '5b' + '6020' + '6004' + '6000' + '37' + // emit: CALLDATACOPY(0, 4, 32)
    '7f' + topic + '6020' + '6000' + 'a1' + '00' + // LOG1(0, 32, topic); STOP
    revertData;
  const len = runtime.length / 2;
  if (len !== 0x42 + 100) throw new Error(`runtime layout changed: ${len} bytes`);
  const init = '60' + len.toString(16).padStart(2, '0') + '80' + '600b' + '6000' + '39' + '6000' + 'f3';
  return '0x' + init + runtime;
}
