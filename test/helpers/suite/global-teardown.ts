import { checkoutLeftovers } from './checkout-guard';

/**
 * Stops the private Redis, then fails the run if the tests left files in the checkout that were
 * not there before (a user's clone must stay clean after npm test): every test writes under a
 * temp folder.
 */
export default async function globalTeardown(): Promise<void> {
  await globalThis.privateRedis?.stop();
  const before = globalThis.checkoutBefore;
  const after = checkoutLeftovers();
  if (before === undefined || after === undefined) return;
  const left = after.filter((path) => !before.includes(path));
  if (left.length > 0)
    throw new Error(
      `the tests left files in the checkout (write under a temp folder instead): ${left.join(', ')}`,
    );
}
